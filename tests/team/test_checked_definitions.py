"""A run refuses, before any model call, an agent type that names an unknown tool or a
model that does not resolve, naming the type and what is wrong (issue 23, item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

import orchestrator as orc
from orchestrator.errors import ConfigError
from orchestrator.models.scripted import ScriptedModel, parse_script
from tests.team.engines import Engine

SCRIPT = {"agents": {"main": [{"text": "done"}]}}


def settings(model: ScriptedModel, engine: Engine, **more: object) -> orc.RunSettings:
    return orc.RunSettings(
        model=model,
        tools=orc.workspace_tools(),
        ui=orc.ListSink(),
        policy=orc.PermissionPolicy(),
        approve=orc.approve_all,
        runner=engine.runner,
        **more,  # type: ignore[arg-type]
    )


async def run(tmp_path: Path, run_settings: orc.RunSettings) -> None:
    root = tmp_path / "sessions"
    session_id, _ = orc.create_session(root, goal="g", model="python:x", workspace=None)
    async with orc.open_session(root, session_id, warn=pytest.fail) as live:
        await orc.drive(live, run_settings)


async def test_a_type_naming_an_unknown_tool_is_refused_before_any_model_call(
    tmp_path: Path,
    engine: Engine,
) -> None:
    model = ScriptedModel(parse_script(SCRIPT))
    weather = orc.AgentDefinition(
        name="weather", prompt="You look up the weather.", tools=("read_file", "lookup_wether")
    )
    definitions = orc.Definitions([*orc.Definitions.builtin(), weather])
    with pytest.raises(ConfigError, match="agent type 'weather' names unknown tool"):
        await run(tmp_path, settings(model, engine, definitions=definitions))
    assert model.requests == []


async def test_a_type_whose_model_does_not_resolve_is_refused_naming_it(
    tmp_path: Path,
    engine: Engine,
) -> None:
    model = ScriptedModel(parse_script(SCRIPT))

    def models(role: str) -> ScriptedModel:
        if role == "explorer":
            raise ConfigError("unknown provider 'nosuch' in 'nosuch:model'")
        return model

    with pytest.raises(ConfigError, match="agent type 'explorer': unknown provider 'nosuch'"):
        await run(tmp_path, settings(model, engine, models=models))
    assert model.requests == []
