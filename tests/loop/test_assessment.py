"""The assessment: every rule of `assess` as a table, then the loop around it end to end
(auto-continuation, loop detection, verification, budgets) with the real team, turn loop
and fold, on a session in memory with scripted models."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio
import trio.testing
from msgspec.structs import replace

from orchestrator import (
    Assessed,
    Budgets,
    ModelRequest,
    Policy,
    Price,
    ScriptedReply,
    Situation,
    TodoList,
    TodosChanged,
    Usage,
    Verified,
    assess,
)
from orchestrator.loop import continuation_note
from orchestrator.loop.assessment import AgentProgress, RefusedCall, Spent, over_budget
from orchestrator.loop.todo_changes import write
from orchestrator.team.queries import MAIN
from orchestrator.tools import Workspace
from orchestrator.tools.todos import TodoSpec
from tests.scenes import Scene, assert_in, c, last_text, reply, steps


def todos(*statuses: str, blocked: dict[str, tuple[str, ...]] | None = None) -> TodoList:
    """Items 1..n with these statuses (blockers by id)."""
    blocked = blocked or {}
    specs = [
        TodoSpec(
            id=str(n), content=f"item {n}", status="pending", blocked_by=blocked.get(str(n), ())
        )
        for n in range(1, len(statuses) + 1)
    ]
    listing = TodoList()
    items = write(listing, specs, at=1)
    # Statuses set directly: the table tests the assessment, not the change rules.
    items = [replace(item, status=s) for item, s in zip(items, statuses, strict=True)]
    listing.apply(1, TodosChanged(agent=MAIN, replace=True, items=tuple(items)))
    return listing


def verdicts(scene: Scene) -> list[str]:
    """The main agent's verdicts, in order (the journal's `assessed` records)."""
    return [e.action for e in scene.events.events if isinstance(e, Assessed) and e.agent == MAIN]


def progress(**fields: Any) -> AgentProgress:
    return AgentProgress(**fields)


def verifying(verify: str, changed: int, verified: int = 0, **situation: Any) -> Situation:
    """A session checked by `verify`: its last change at seq `changed`, its last passed
    check at `verified` (0: none); every todo completed, unless `situation` says else."""
    seqs = {"changed_seq": changed, **({"verified_seq": verified} if verified else {})}
    fields = {"todos": todos("completed"), **situation}
    return Situation(**fields, progress=progress(**seqs), verify=(verify,))


REFUSED = RefusedCall(agent="t1", tool="write_file", arguments='{"path": "a"}')
REFUSED_SHELL = RefusedCall(agent=MAIN, tool="shell", arguments='{"command": "make"}')


CASES: list[tuple[str, Situation, str, str]] = [
    # (name, situation, action, a phrase of its reasons)
    ("nothing open", Situation(todos=TodoList(), progress=progress()), "completed", ""),
    (
        "all done",
        Situation(todos=todos("completed", "cancelled"), progress=progress()),
        "completed",
        "all 1 todos done",
    ),
    (
        "open todo",
        Situation(todos=todos("completed", "pending"), progress=progress()),
        "continue_from_context",
        "1 todo remains",
    ),
    (
        "in progress",
        Situation(todos=todos("in_progress"), progress=progress()),
        "continue_from_context",
        "1 todo remains",
    ),
    (
        "continuations used up",
        Situation(todos=todos("pending"), progress=progress(continues=10), max_continues=10),
        "budget_exhausted",
        "all 10 automatic continuations used",
    ),
    (
        "nothing workable, live tasks",
        Situation(todos=todos("completed"), progress=progress(), live_tasks=("t1",)),
        "await_tasks",
        "waiting for tasks t1",
    ),
    (
        "blocked todo waits on live task work",
        Situation(
            todos=todos("failed", "pending", blocked={"2": ("1",)}),
            progress=progress(),
            live_tasks=("t2",),
        ),
        "await_tasks",
        "t2",
    ),
    (
        "every open item waits on failed work",
        Situation(todos=todos("failed", "pending", blocked={"2": ("1",)}), progress=progress()),
        "blocked",
        "todo 2 waits on failed or cancelled work: 1",
    ),
    (
        "reported blocked",
        Situation(todos=todos("pending"), progress=progress(blocked="credential: no key")),
        "blocked",
        "reported blocked: credential: no key",
    ),
    (
        "same reply three times",
        Situation(todos=todos("pending"), progress=progress(reply_repeats=3)),
        "blocked",
        "stalled: the same reply 3 times",
    ),
    (
        "same call three times",
        Situation(todos=todos("pending"), progress=progress(call_repeats=3)),
        "blocked",
        "stalled: the same tool call 3 times",
    ),
    (
        "no progress for N rounds",
        Situation(todos=todos("pending"), progress=progress(idle_rounds=6), stall_rounds=6),
        "blocked",
        "stalled: 6 rounds without progress",
    ),
    (
        "budget spent wins over everything",
        Situation(
            todos=todos("pending"),
            progress=progress(blocked="x: y"),
            spent=("session token budget spent",),
        ),
        "budget_exhausted",
        "session token budget spent",
    ),
    (
        "done, verification never passed",
        verifying("pytest -q", 5),
        "verify",
        "not verified since the last change: pytest -q",
    ),
    (
        "done, verified before the last change",
        verifying("make", 9, 7),
        "verify",
        "make",
    ),
    (
        "done and verified since",
        verifying("make", 9, 12),
        "completed",
        "verified: make passed",
    ),
    (
        "a subagent must report",
        Situation(todos=todos("completed"), progress=progress(), must_report=True, max_continues=3),
        "continue_from_context",
        "call complete",
    ),
    (
        "interactive: the user answers next",
        Situation(todos=todos("completed"), progress=progress(), interactive=True),
        "await_user",
        "all 1 todos done",
    ),
    (
        "unanswered questions named when stalled",
        Situation(todos=TodoList(), progress=progress(reply_repeats=3), waiting_on_it=("t4",)),
        "blocked",
        "tasks t4 wait for answers never given",
    ),
    (
        "a builder whose plan todos are its running tasks' waits for them",
        Situation(
            todos=todos("in_progress", "pending"),
            progress=progress(),
            live_tasks=("t1", "t2"),
            in_hand=frozenset({"1", "2"}),
        ),
        "await_tasks",
        "waiting for tasks t1, t2",
    ),
    (
        "a builder with a plan todo not delegated yet goes on",
        Situation(
            todos=todos("in_progress", "pending"),
            progress=progress(),
            live_tasks=("t1",),
            in_hand=frozenset({"1"}),
            max_continues=3,
        ),
        "continue_from_context",
        "2 todos remain",
    ),
    (
        "a call refused for want of approval",
        Situation(todos=TodoList(), progress=progress(), refused=(REFUSED, REFUSED_SHELL)),
        "blocked",
        "2 calls refused for want of approval (nobody could be asked): shell, write_file",
    ),
    (
        "a refusal, but the verification passed since the last change",
        verifying("pytest", 9, 12, todos=TodoList(), refused=(REFUSED,)),
        "completed",
        "verified: pytest passed",
    ),
    (
        "a refusal, not verified since",
        verifying("pytest", 9, 7, todos=TodoList(), refused=(REFUSED,)),
        "verify",
        "not verified",
    ),
]


@pytest.mark.parametrize(
    ("situation", "action", "phrase"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_rule(situation: Situation, action: str, phrase: str) -> None:
    verdict = assess(situation)
    assert verdict.action == action
    assert phrase in "; ".join(verdict.reasons)


def test_budgets_name_what_is_spent() -> None:
    budgets = Budgets(rounds=10, tokens=1000, cost=0.5, wall=60)
    assert over_budget(budgets, Spent(rounds=9, tokens=999, cost=0.49, wall=59)) == []
    reasons = over_budget(budgets, Spent(rounds=10, tokens=1000, cost=0.5, wall=60))
    assert [r.split(" budget")[0] for r in reasons] == [
        "session round",
        "session token",
        "session cost",
        "session wall-time",
    ]
    # An unknown cost (a model without a price) spends no cost budget.
    assert over_budget(Budgets(cost=0.1), Spent(cost=None)) == []


def test_the_continuation_note_restates_goal_progress_items_and_reasons() -> None:
    listing = todos("completed", "in_progress", "pending", blocked={"3": ("2",)})
    listing.goal = "ship the parser"
    verdict = assess(Situation(todos=listing, progress=progress(continues=2)))
    note = continuation_note(listing, verdict, count=3, limit=10, live_tasks=("t1",))
    assert_in(
        note,
        "(auto-continue 3 of 10)",
        "Goal: ship the parser",
        "Tasks 1/3",
        "[3] [blocked by 2] item 3",
        "Live tasks: t1",
        "Why: 2 todos remain",
    )
    assert continuation_note(listing, verdict, count=1, limit=2, text="GO ON").startswith("GO ON\n")


# --- end to end ---------------------------------------------------------------------------------


def plan(*contents: str) -> tuple[str, dict[str, Any]]:
    return c("todo_write", todos=[{"content": text} for text in contents])


async def test_auto_continuation_until_the_todos_are_done(workspace: Workspace) -> None:
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", plan("a", "b", "c")),
                reply("", c("todo_update", id="1", status="completed")),
                reply("I did a."),  # stops early: two items remain
                reply("", c("todo_update", id="2", status="completed")),
                reply("Now b."),
                reply("", c("todo_update", id="3", status="completed")),
                reply("All three are done."),
            )
        },
    )
    outcome = await scene.run()
    assert (outcome.reason, outcome.detail) == ("completed", "all 3 todos done")
    assert verdicts(scene) == [
        "continue_from_context",
        "continue_from_context",
        "completed",
    ]
    notes = [
        m.content
        for m in scene.state.agents[MAIN].messages
        if "[auto-continue]" in getattr(m, "content", "")
    ]
    assert "(auto-continue 1 of 10)" in notes[0]
    assert "Why: 2 todos remain" in notes[0]
    assert "(auto-continue 2 of 10)" in notes[1]
    assert "Why: 1 todo remains" in notes[1]
    assert scene.state.progress[MAIN].continues == 2


async def test_loop_detection_stops_a_model_that_repeats_itself(workspace: Workspace) -> None:
    scene = Scene(
        workspace, {MAIN: steps(reply("", plan("a")), *[reply("I am working on it.")] * 3)}
    )
    outcome = await scene.run()
    assert outcome.reason == "blocked"
    assert "stalled: the same reply 3 times in a row" in outcome.detail


async def test_loop_detection_stops_a_repeated_tool_call_within_a_turn(
    workspace: Workspace,
) -> None:
    scene = Scene(
        workspace, {MAIN: steps(reply("", plan("a")), *[reply("", c("list_dir", path="."))] * 3)}
    )
    outcome = await scene.run()
    assert outcome.reason == "blocked"
    assert "stalled: the same tool call 3 times in a row" in outcome.detail
    assert scene.state.agents[MAIN].steps == 4  # stopped there, not at --max-rounds


async def test_rounds_without_progress_count_as_stalled(workspace: Workspace) -> None:
    replies = [reply("", plan("a"))] + [reply(f"thinking ({n})") for n in range(3)]
    scene = Scene(workspace, {MAIN: steps(*replies)}, policy=Policy(stall_rounds=3))
    outcome = await scene.run()
    assert outcome.reason == "blocked"
    assert "stalled: 3 rounds without progress" in outcome.detail


async def test_the_main_agent_reports_itself_blocked(workspace: Workspace) -> None:
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", plan("deploy")),
                reply("", c("report_blocked", category="credential", reason="no deploy key")),
            )
        },
    )
    outcome = await scene.run()
    assert (outcome.reason, outcome.detail) == (
        "blocked",
        "reported blocked: credential: no deploy key",
    )


def check(script: str) -> str:
    return f"{sys.executable} -c {script!r}"


async def test_verification_fails_then_passes(workspace: Workspace) -> None:
    # The check passes once `fixed.txt` exists; the agent writes it after the failure.
    verify = check("import pathlib, sys; sys.exit(0 if pathlib.Path('fixed.txt').exists() else 3)")

    def after_failure(request: ModelRequest) -> ScriptedReply:
        text = last_text(request)
        assert "[verification failed]" in text, text
        assert "exit code 3" in text, text
        return reply("", c("write_file", path="fixed.txt", content="yes"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", plan("fix")),
                reply("", c("todo_update", id="1", status="completed")),
                reply("Done."),
                after_failure,
                reply("Fixed."),
            )
        },
        policy=Policy(verify=(verify,)),
    )
    outcome = await scene.completes()
    assert outcome.detail == f"all 1 todos done; verified: {verify} passed"
    assert verdicts(scene) == ["verify", "verify", "completed"]
    # The exit code is the tool's fact (ToolOutput.exit_code), not read from the output.
    assert [e.exit_code for e in scene.events.events if isinstance(e, Verified)] == [3, 0]
    assert scene.state.progress[MAIN].verify_failures == 1
    assert scene.state.progress[MAIN].continues == 1  # the failure used one


async def test_a_token_budget_ends_the_session(workspace: Workspace) -> None:
    def costly(text: str, *calls: tuple[str, dict[str, Any]]) -> ScriptedReply:
        return ScriptedReply(
            text=text,
            tool_calls=reply("", *calls).tool_calls,
            usage=Usage(input_tokens=600, output_tokens=100),
        )

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                costly("", plan("a", "b")),
                costly("", c("todo_update", id="1", status="completed")),
                costly("x"),
            )
        },
        policy=Policy(budgets=Budgets(tokens=1000)),
    )
    outcome = await scene.run()
    assert outcome.reason == "budget_exhausted"
    assert "session token budget spent: 1,400 of 1,000" in outcome.detail
    assert scene.state.agents[MAIN].steps == 2  # the third call was refused


async def test_a_cost_budget_uses_the_price_table(workspace: Workspace) -> None:
    priced = ScriptedReply(
        text="", tool_calls=reply("", plan("a")).tool_calls, usage=Usage(input_tokens=1_000_000)
    )
    scene = Scene(
        workspace,
        {MAIN: steps(priced, reply("never asked"))},
        policy=Policy(
            budgets=Budgets(cost=2.0), prices={"scripted": Price(input=3.0, output=15.0)}
        ),
    )
    outcome = await scene.run()
    assert outcome.reason == "budget_exhausted"
    assert "session cost budget spent: $3.0000 of $2.0000" in outcome.detail


async def test_a_wall_time_budget_ends_the_session(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    async def slow(request: ModelRequest) -> ScriptedReply:
        await trio.sleep(40)
        return reply("", c("todo_update", id="1", status="in_progress"))

    scene = Scene(
        workspace,
        {MAIN: steps(reply("", plan("a")), slow, slow, reply("never"))},
        policy=Policy(budgets=Budgets(wall=60)),
    )
    outcome = await scene.run()
    assert outcome.reason == "budget_exhausted"
    assert "session wall-time budget spent: 80 s of 60 s" in outcome.detail
