"""Re-planning: a blocked plan task goes back to a fresh planner with the plan's state,
the next version keeps what completed, is approved like the first, and is handed to the
builder as a diff while the rest goes on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from orchestrator import load_state
from tests.plans.test_handoff import APPROVE, Approver, new_session, run, task, worker

V1 = {
    "goal": "write three files",
    "tasks": [task("a", "a.txt"), task("b", "b.txt", ["a"]), task("c", "c.txt")],
}
V2 = {**V1, "tasks": [{**task("a", "a.txt"), "title": "write a.txt another way"}, *V1["tasks"][1:]]}
WAIT = {"name": "wait_tasks", "arguments": {}}
BLOCKED = {"name": "report_blocked", "arguments": {"category": "input", "reason": "no way"}}
REPLAN = {"name": "replan", "arguments": {"task": "a", "reason": "a needs another way"}}


def delegate(ref: str) -> dict[str, Any]:
    return {
        "name": "delegate",
        "arguments": {
            "description": f"plan task {ref}",
            "prompt": "do it",
            "plan_ref": ref,
            "write_scope": [f"{ref}.txt"],
        },
    }


SCRIPT: dict[str, Any] = {
    "agents": {
        "planner": [{"tool_calls": [{"name": "submit_plan", "arguments": V1}]}],
        "planner-2": [{"tool_calls": [{"name": "submit_plan", "arguments": V2}]}],
        "main": [
            {"tool_calls": [delegate("a"), delegate("c")]},
            {"tool_calls": [WAIT]},
            {"tool_calls": [REPLAN]},
            {"tool_calls": [delegate("a")]},
            {"tool_calls": [WAIT]},
            {"tool_calls": [delegate("b")]},
            {"tool_calls": [WAIT]},
            {"text": "built"},
        ],
        "t1": [{"tool_calls": [BLOCKED]}, *worker("a.txt")],
        "t2": worker("c.txt"),
        "t3": worker("b.txt"),
    }
}


async def test_a_blocked_task_is_replanned_and_the_new_version_handed_over(
    tmp_path: Path,
) -> None:
    root, session_id, directory = new_session(tmp_path, SCRIPT)
    approver = Approver(APPROVE, APPROVE)
    result = await run(root, session_id, SCRIPT, approver)
    assert result.status == "completed", result
    state = load_state(directory, warn=pytest.fail)
    plans = state.plans
    assert [(v.version, v.decision) for v in plans.versions] == [(1, "approved"), (2, "approved")]
    assert plans.seeded == 2
    assert [(r.plan_task, r.planner) for r in plans.replans] == [("a", "planner-2")]
    # The re-planner started fresh, from the plan's state and the reason.
    brief = state.agents["planner-2"].messages[1].content
    assert "sent plan task a back for re-planning: a needs another way" in brief
    assert "- c: completed" in brief
    # The builder was told what changed, and its todos are the new version's tasks.
    told = [m.content for m in state.agents["main"].messages if m.role == "user"]
    assert any("Plan v2 is approved (changed a; kept b, c)" in m for m in told)
    items = state.todos["main"].items
    assert items["a"].content == "write a.txt another way"
    assert {i: t.status for i, t in items.items()} == {
        "a": "completed",
        "b": "completed",
        "c": "completed",
    }
    a = state.tasks.by_plan_ref("a")
    assert a is not None
    assert a.attempts == 2


async def test_a_new_version_must_keep_the_completed_tasks(tmp_path: Path) -> None:
    script = {**SCRIPT, "agents": {**SCRIPT["agents"]}}
    dropped_c = {**V2, "tasks": V2["tasks"][:2]}
    script["agents"]["planner-2"] = [
        {"tool_calls": [{"name": "submit_plan", "arguments": dropped_c}]},
        {"tool_calls": [{"name": "submit_plan", "arguments": V2}]},
    ]
    root, session_id, directory = new_session(tmp_path, script)
    assert (await run(root, session_id, script, Approver(APPROVE, APPROVE))).status == "completed"
    state = load_state(directory, warn=pytest.fail)
    refused = state.agents["planner-2"].messages[3].content
    assert "a new version keeps the work done" in refused
    assert "c: completed, so it must stay in the plan" in refused
    assert len(state.plans.versions) == 2


async def test_a_replan_nobody_approves_stops_the_session_blocked(tmp_path: Path) -> None:
    root, session_id, _directory = new_session(tmp_path, SCRIPT)
    result = await run(root, session_id, SCRIPT, Approver(APPROVE, None))
    assert result.status == "blocked"
    assert result.detail == "plan v2 awaits approval"
    assert "execute ID --approve" in result.advice
    approver = Approver(APPROVE)
    assert (await run(root, session_id, SCRIPT, approver)).status == "completed"
    assert [v.version for v in approver.shown] == [2]


async def test_a_compaction_after_a_replan_restores_the_new_version(tmp_path: Path) -> None:
    root, session_id, directory = new_session(tmp_path, SCRIPT)
    assert (await run(root, session_id, SCRIPT, Approver(APPROVE, APPROVE))).status == "completed"
    compacted = await trio.run_process(
        [sys.executable, "-m", "orchestrator", "sessions", "compact", session_id, "--agent",
         "main", "--sessions-dir", str(root)],
        capture_stdout=True, capture_stderr=True, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert compacted.returncode == 0, compacted.stderr
    state = load_state(directory, warn=pytest.fail)
    [anchors] = [
        m.content
        for m in state.agents["main"].messages
        if m.role == "user" and m.content.startswith("[Restored from the session's records")
    ]
    assert "### a. write a.txt another way" in anchors  # v2, the plan being built
    assert anchors.count("# Plan: write three files") == 1  # not v1 too, inside the goal
