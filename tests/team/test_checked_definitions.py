"""A run refuses, before any model call, an agent type that names an unknown tool or a
model that does not resolve, naming the type and what is wrong (issue 23, item 3). A
built-in type whose tools the session lacks is left out instead (issue 36, item 9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import orchestrator as orc
from orchestrator import ScriptedModel, SystemMessage, ToolResult
from orchestrator.errors import ConfigError
from orchestrator.models.scripted import parse_script
from orchestrator.tools import Grep, ListFiles, ReadFile
from tests.team.engines import Engine

SCRIPT = {"agents": {"main": [{"text": "done"}]}}


def settings(model: ScriptedModel, engine: Engine, **more: object) -> orc.RunSettings:
    given: dict[str, object] = {"tools": orc.workspace_tools(), **more}
    return orc.RunSettings(
        model=model,
        ui=orc.ListSink(),
        policy=orc.PermissionPolicy(),
        approve=orc.approve_all,
        runner=engine.runner,
        **given,  # type: ignore[arg-type]
    )


async def run(tmp_path: Path, run_settings: orc.RunSettings) -> None:
    root = tmp_path / "sessions"
    session_id, _ = orc.create_session(root, goal="g", model="python:x", workspace=None)
    async with orc.open_session(root, session_id, warn=pytest.fail) as live:
        await orc.drive(live, run_settings)


async def refused(
    tmp_path: Path, model: ScriptedModel, engine: Engine, match: str, **given: Any
) -> None:
    """A run given `given` is refused as `match` says, before any model call."""
    with pytest.raises(ConfigError, match=match):
        await run(tmp_path, settings(model, engine, **given))
    assert model.requests == []


async def test_a_type_naming_an_unknown_tool_is_refused_before_any_model_call(
    tmp_path: Path, engine: Engine
) -> None:
    model = ScriptedModel(parse_script(SCRIPT))
    weather = orc.AgentDefinition(
        name="weather", prompt="You look up the weather.", tools=("read_file", "lookup_wether")
    )
    definitions = orc.Definitions([*orc.Definitions.builtin(), weather])
    match = "agent type 'weather' names unknown tool"
    await refused(tmp_path, model, engine, match, definitions=definitions)


async def test_a_type_whose_model_does_not_resolve_is_refused_naming_it(
    tmp_path: Path, engine: Engine
) -> None:
    model = ScriptedModel(parse_script(SCRIPT))

    def models(role: str) -> ScriptedModel:
        if role == "explorer":
            raise ConfigError("unknown provider 'nosuch' in 'nosuch:model'")
        return model

    match = "agent type 'explorer': unknown provider 'nosuch'"
    await refused(tmp_path, model, engine, match, models=models)


async def test_a_built_in_type_the_sessions_tools_cannot_serve_is_left_out(
    tmp_path: Path, engine: Engine
) -> None:
    # Tools of the session's own, the read-only ones: the explorer has its tools, the
    # worker lacks write_file, edit_file and shell, and is no type of this session's.
    script = {
        "agents": {
            "main": [
                {
                    "tool_calls": [
                        {
                            "name": "delegate",
                            "arguments": {
                                "description": "d",
                                "prompt": ".",
                                "agent_type": "worker",
                            },
                        }
                    ]
                },
                {"text": "done"},
            ]
        }
    }
    model = ScriptedModel(parse_script(script))
    read_only = orc.ToolRegistry([ReadFile(), ListFiles(), Grep()])
    await run(tmp_path, settings(model, engine, tools=read_only))
    system = model.requests[0].messages[0]
    assert isinstance(system, SystemMessage)
    assert "Subagent types: explorer: " in system.content
    assert "worker" not in system.content
    result = model.requests[1].messages[-1]
    assert isinstance(result, ToolResult)
    assert (result.status, result.content) == (
        "error",
        "unknown agent_type 'worker'; the types are: explorer",
    )


async def test_a_built_in_type_changed_by_the_user_still_names_its_tools(
    tmp_path: Path, engine: Engine
) -> None:
    model = ScriptedModel(parse_script(SCRIPT))
    worker = orc.Definitions.builtin().get("worker").model_copy(update={"max_rounds": 7})
    definitions = orc.Definitions([worker])
    read_only = orc.ToolRegistry([ReadFile(), ListFiles(), Grep()])
    with pytest.raises(ConfigError, match="agent type 'worker' names unknown tool"):
        await run(tmp_path, settings(model, engine, tools=read_only, definitions=definitions))
    assert model.requests == []
