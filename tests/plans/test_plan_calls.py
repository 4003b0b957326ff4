"""Plans from Python: `plan`, `approve` (or reject), `execute` and `seed_todos` on an open
session, each a journaled step like the command line's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import orchestrator as orc
from orchestrator import ScriptedModel
from orchestrator.errors import ConfigError
from orchestrator.loop.todos import TodoError
from orchestrator.models.scripted import parse_script
from tests.plans.test_handoff import PLAN_ARGS, SCRIPT, new_session


def settings(script: dict[str, Any] = SCRIPT, **more: object) -> orc.RunSettings:
    return orc.RunSettings(
        model=ScriptedModel(parse_script(script)),
        tools=orc.workspace_tools(),
        ui=orc.ListSink(),
        policy=orc.PermissionPolicy(),
        approve=orc.approve_all,
        **more,  # type: ignore[arg-type]
    )


async def test_plan_then_approve_builds_it(tmp_path: Path) -> None:
    root, session_id, _ = new_session(tmp_path, SCRIPT)
    async with orc.open_session(root, session_id, warn=pytest.fail) as live:
        result = await orc.plan(live, settings())
        assert (result.status, result.detail) == ("blocked", "plan v1 awaits approval")
        assert "main" not in live.state.agents
        with pytest.raises(ConfigError, match="has a plan already"):
            await orc.execute(live, settings(), orc.parse_plan_json(b'{"version": 1, "goal": "g"}'))
    async with orc.open_session(root, session_id, warn=pytest.fail) as live:
        assert (await orc.approve(live, settings())).status == "completed"
        version = live.state.plans.approved_version
        assert version is not None
        assert version.by == "library"
        with pytest.raises(ConfigError, match="no plan of this session waits"):
            await orc.approve(live, settings())


async def test_a_rejection_plans_again_and_stops_at_the_next_version(tmp_path: Path) -> None:
    script = {**SCRIPT, "agents": {**SCRIPT["agents"]}}
    submit = {"tool_calls": [{"name": "submit_plan", "arguments": PLAN_ARGS}]}
    script["agents"]["planner"] = [submit, submit]
    root, session_id, _ = new_session(tmp_path, script)
    async with orc.open_session(root, session_id, warn=pytest.fail) as live:
        run = settings(script)
        await orc.plan(live, run)
        result = await orc.approve(live, run, reject=True, feedback="smaller")
        assert result.detail == "plan v2 awaits approval"
        assert [(v.version, v.decision, v.feedback) for v in live.state.plans.versions] == [
            (1, "rejected", "smaller"),
            (2, None, ""),
        ]


async def test_execute_builds_a_plan_given_in_code_decided_by_a_callback(tmp_path: Path) -> None:
    root, session_id, _ = new_session(tmp_path, SCRIPT)
    tasks = tuple(
        orc.PlanTask(
            id=t["id"],
            title=t["title"],
            depends_on=tuple(t["depends_on"]),
            write_scope=tuple(t["write_scope"]),
            acceptance=t["acceptance"],
        )
        for t in PLAN_ARGS["tasks"]
    )
    plan = orc.Plan(goal="write two files", tasks=tasks)
    shown: list[int] = []

    async def decide(version: orc.PlanVersion) -> orc.PlanVerdict:
        shown.append(version.version)
        return orc.PlanVerdict("approved", by="my program")

    async with orc.open_session(root, session_id, warn=pytest.fail) as live:
        bad = orc.Plan(goal="g")
        with pytest.raises(orc.PlanError, match="the plan has no tasks"):
            await orc.execute(live, settings(approve_plan=decide), bad)
        assert not live.state.plans.versions
        result = await orc.execute(live, settings(approve_plan=decide), plan)
        assert result.status == "completed"
        assert shown == [1]
        version = live.state.plans.approved_version
        assert version is not None
        assert (version.source, version.by) == ("library", "my program")


async def test_seed_todos_checks_and_journals_a_list(tmp_path: Path) -> None:
    root, session_id, directory = new_session(tmp_path, SCRIPT)
    async with orc.open_session(root, session_id, warn=pytest.fail) as live:
        with pytest.raises(TodoError, match="duplicate ids"):
            await orc.seed_todos(
                live, [orc.TodoItem(id="1", content="x"), orc.TodoItem(id="1", content="y")]
            )
        await orc.seed_todos(
            live,
            [
                orc.TodoItem(id="1", content="read"),
                orc.TodoItem(id="2", content="write", blocked_by=("1",)),
            ],
        )
    state = orc.load_state(directory, warn=pytest.fail)
    items = state.todos["main"].items
    assert [(i.id, i.content, i.blocked_by) for i in items.values()] == [
        ("1", "read", ()),
        ("2", "write", ("1",)),
    ]
    assert items["1"].created > 0
