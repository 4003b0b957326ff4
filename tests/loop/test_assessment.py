"""The assessment: every rule of `assess` as a table (`test_assessment_run.py` has the loop
around it end to end)."""

from __future__ import annotations

from typing import Any

import pytest
from msgspec.structs import replace

from orchestrator import (
    Budgets,
    Situation,
    TodoList,
    TodosChanged,
    assess,
)
from orchestrator.loop import continuation_note
from orchestrator.loop.assessment import AgentProgress, RefusedCall, Spent, over_budget
from orchestrator.loop.todo_changes import write
from orchestrator.team.queries import MAIN
from orchestrator.tools.todos import TodoSpec
from tests.scenes import assert_in


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
