"""Plans that end (issue 37, item 6): an `after` that closes a dependency cycle is refused
with the cycle named, and re-planning is bounded per task and per session, past which
the session stops blocked saying why and what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from orchestrator import load_state
from orchestrator.loop.plan import PlanLimits
from tests.plans.test_handoff import APPROVE, Approver, new_session, run, task, worker


def delegate(ref: str, after: list[str] | None = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"description": f"plan task {ref}", "prompt": "do", "plan_ref": ref}
    if after is not None:
        arguments["after"] = after
    return {"name": "delegate", "arguments": arguments}


WAIT = {"name": "wait_tasks", "arguments": {}}
TWO = {"goal": "write two files", "tasks": [task("p", "p.txt"), task("q", "q.txt")]}


def results(directory: Path, agent: str = "main") -> list[str]:
    state = load_state(directory, warn=pytest.fail)
    return [m.content for m in state.agents[agent].messages if m.role == "tool"]


async def build_two(tmp_path: Path, plan: dict[str, Any], *first: dict[str, Any]) -> Path:
    """A session that plans p and q as `plan` says, whose builder delegates as the two
    calls `first` say (the second refused), then q, waits for both and ends: completed.
    Its directory."""
    script: dict[str, Any] = {
        "agents": {
            "planner": [{"tool_calls": [{"name": "submit_plan", "arguments": plan}]}],
            "main": [
                *({"tool_calls": [call]} for call in first),
                {"tool_calls": [delegate("q")]},
                {"tool_calls": [WAIT]},
                {"tool_calls": [WAIT]},
                {"text": "built"},
            ],
            "t1": worker("p.txt"),
            "t2": worker("q.txt"),
        }
    }
    root, session_id, directory = new_session(tmp_path, script)
    result = await run(root, session_id, script, Approver(APPROVE))
    assert result.status == "completed", result
    return directory


async def test_after_that_closes_a_cycle_is_refused_naming_it(tmp_path: Path) -> None:
    # The second delegation closes p -> q -> p: refused.
    with trio.fail_after(60):  # before the fix, both waited for ever
        directory = await build_two(tmp_path, TWO, delegate("p", ["q"]), delegate("q", ["p"]))
    refused = results(directory)[1]
    assert refused.startswith("delegation refused: plan task q waiting for p would close")
    assert "a dependency cycle: q -> p -> q" in refused
    state = load_state(directory, warn=pytest.fail)
    assert sorted(t.plan_ref for t in state.tasks.tasks.values()) == ["p", "q"]


async def test_a_cycle_through_the_plans_own_dependency_is_refused(tmp_path: Path) -> None:
    """q depends on p in the plan; p delegated first waiting for q closes the cycle
    through q's plan dependency, though q has no task yet."""
    plan = {"goal": "g", "tasks": [task("p", "p.txt"), task("q", "q.txt", ["p"])]}
    with trio.fail_after(60):
        directory = await build_two(tmp_path, plan, delegate("p", ["q"]), delegate("p"))
    assert "a dependency cycle: p -> q -> p" in results(directory)[0]


BLOCKED = {"name": "report_blocked", "arguments": {"category": "input", "reason": "no way"}}
REPLAN = {"name": "replan", "arguments": {"task": "p", "reason": "p needs another way"}}


def replanning_script(replans: int) -> dict[str, Any]:
    """The builder delegates p, which reports blocked each time (a retry is a new attempt
    of task t1), and sends it back for re-planning, `replans` + 1 times: the last is
    refused, and the builder cancels the task and ends its turn: nothing goes on."""
    one = {"goal": "write a file", "tasks": [task("p", "p.txt")]}
    agents: dict[str, Any] = {
        "planner": [{"tool_calls": [{"name": "submit_plan", "arguments": one}]}],
        "main": [],
        "t1": [{"tool_calls": [BLOCKED]}] * (replans + 1),
    }
    for n in range(replans + 1):
        agents["main"] += [{"tool_calls": [delegate("p")]}, {"tool_calls": [WAIT]}]
        agents["main"] += [{"tool_calls": [REPLAN]}]
        agents[f"planner-{n + 2}"] = [{"tool_calls": [{"name": "submit_plan", "arguments": one}]}]
    cancel = {"name": "cancel_task", "arguments": {"task": "t1", "reason": "no new plan"}}
    agents["main"] += [{"tool_calls": [cancel]}, {"text": "I cannot go on."}]
    return {"agents": agents}


@pytest.mark.parametrize(
    ("limits", "replanned", "why"),
    [
        (
            PlanLimits(max_replans_per_task=2),
            2,
            "it was re-planned 2 time(s), the limit for one task ([plan] max_replans_per_task = 2)",
        ),
        (
            PlanLimits(max_replans=1),
            1,
            "the session's plan was re-planned 1 time(s), the limit ([plan] max_replans = 1)",
        ),
    ],
)
async def test_replans_are_bounded_and_the_session_stops_blocked(
    tmp_path: Path, limits: PlanLimits, replanned: int, why: str
) -> None:
    script = replanning_script(replanned)
    root, session_id, directory = new_session(tmp_path, script)
    approver = Approver(*[APPROVE] * 10)
    with trio.fail_after(60):
        result = await run(root, session_id, script, approver, plan_limits=limits)
    state = load_state(directory, warn=pytest.fail)
    assert len(state.plans.replans) == replanned
    assert len(state.plans.versions) == replanned + 1
    refused = [r for r in results(directory) if r.startswith("replan refused")]
    assert refused == [
        f"replan refused: plan task p cannot be re-planned again: {why}. Go on "
        "without a new plan: retry it as it stands (delegate it again with its plan_ref), go "
        "on with the other tasks, or call report_blocked to ask the person. If nothing else "
        "can go on, end your turn: the session stops blocked and says why."
    ]
    assert result.status == "blocked", result
    assert result.detail.startswith(
        f"plan task p cancelled and cannot be re-planned: {why}; resume with --message"
    )
    assert "raise the limit in the [plan] table of the config" in result.detail
