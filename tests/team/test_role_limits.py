"""An agent type's own limit on its live tasks (`AgentDefinition.max_live`), beside the
session's `max_live`: on both engines, since the session's scheduler keeps it before a
task is started or put on the engine's queue."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import trio

from orchestrator import Definitions, ModelRequest, ScriptedReply, load_definitions
from orchestrator.errors import ConfigError
from orchestrator.team.definitions import EXPLORER
from orchestrator.team.queries import MAIN
from orchestrator.tools import Workspace
from tests.scenes import Scene, c, reply, steps
from tests.team.engines import Engine


async def test_a_type_at_its_own_limit_waits_while_other_types_start(
    workspace: Workspace, engine: Engine
) -> None:
    live: dict[str, int] = {"explorer": 0, "worker": 0}
    most: dict[str, int] = {"explorer": 0, "worker": 0}
    worker_ran = trio.Event()
    release = trio.Event()

    def holding(role: str) -> object:
        async def brain(request: ModelRequest) -> ScriptedReply:
            live[role] += 1
            most[role] = max(most[role], live[role])
            if role == "worker":
                worker_ran.set()
            else:
                await release.wait()
            live[role] -= 1
            return reply("", c("complete", summary="held"))

        return brain

    async def wait_then_release(request: ModelRequest) -> ScriptedReply:
        # The worker was delegated last, behind an explorer held back by its type's
        # limit: it ran before any explorer finished.
        await worker_ran.wait()
        release.set()
        return reply("", c("wait_tasks"))

    delegations = [
        c("delegate", description="e1", prompt=".", agent_type="explorer"),
        c("delegate", description="e2", prompt=".", agent_type="explorer"),
        c("delegate", description="w1", prompt=".", agent_type="worker"),
    ]
    scene = Scene(
        workspace,
        {
            MAIN: steps(reply("", *delegations), wait_then_release, reply("done")),
            "explorer": holding("explorer"),  # type: ignore[dict-item]
            "worker": holding("worker"),  # type: ignore[dict-item]
        },
        max_live=8,
        engine=engine,
    )
    one_at_a_time = EXPLORER.model_copy(update={"max_live": 1})
    scene.wire(
        definitions=Definitions(
            [d if d.name != "explorer" else one_at_a_time for d in Definitions.builtin()]
        )
    )
    await scene.completes()
    results = [m.content for m in scene.state.agents[MAIN].messages if m.role == "tool"]
    assert "queued" not in results[0]
    assert results[1].startswith("delegated (queued: 1 explorer task(s) run, its type's limit)")
    assert "queued" not in results[2]
    assert most == {"explorer": 1, "worker": 1}
    assert {t.state for t in scene.state.tasks.tasks.values()} == {"completed"}


def test_a_type_file_sets_its_limit_and_a_project_may_only_lower_it(tmp_path: Path) -> None:
    load = functools.partial(
        load_definitions, trust=None, ask=None, known_tools=("read_file", "list_files", "grep")
    )
    user, project = tmp_path / "user", tmp_path / "project"
    (user / "agents").mkdir(parents=True)
    (project / ".orchestrator" / "agents").mkdir(parents=True)
    (user / "agents" / "explorer.toml").write_text("max_live = 3\n")
    found = load(user_dir=user, project_dir=project)
    assert found.get("explorer").max_live == 3
    assert found.get("worker").max_live is None

    (project / ".orchestrator" / "agents" / "explorer.toml").write_text("max_live = 2\n")
    assert load(user_dir=user, project_dir=project).get("explorer").max_live == 2

    (project / ".orchestrator" / "agents" / "explorer.toml").write_text("max_live = 5\n")
    with pytest.raises(ConfigError, match=r"max_live: 5 \(was 3\)"):
        load(user_dir=user, project_dir=project)

    (user / "agents" / "explorer.toml").write_text("max_live = 0\n")
    with pytest.raises(ConfigError, match=r"explorer.toml: max_live: Input should be greater"):
        load(user_dir=user, project_dir=project)
