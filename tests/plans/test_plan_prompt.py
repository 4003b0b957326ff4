"""The approval question at the terminal: only `a` (or a valid edit) approves; EOF and
`q` decide nothing; a rejection carries the person's feedback; an edit is checked."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from orchestrator import Plan, PlanTask, PlanVerdict, PlanVersion
from orchestrator.cli.plan_prompt import PlanPrompt, plan_approver

PLAN = Plan(goal="g", tasks=(PlanTask(id="a", title="do a", acceptance="true"),))
VERSION = PlanVersion(version=1, plan=PLAN, warnings=["a warning"])


def lines(*answers: str) -> Callable[[], str]:
    queue = list(answers)
    return lambda: queue.pop(0) if queue else ""  # then EOF


def editing(*texts: str) -> Callable[[Path], None]:
    queue = list(texts)

    def edit(path: Path) -> None:
        path.write_text(queue.pop(0))

    return edit


async def ask(*answers: str, edit: Callable[[Path], None] | None = None) -> tuple[object, str]:
    out = io.StringIO()
    verdict = await PlanPrompt(out, lines(*answers), edit)(VERSION)
    return verdict, out.getvalue()


async def test_the_plan_is_shown_whole_and_only_a_approves() -> None:
    verdict, shown = await ask("\n", "yes\n", "a\n")
    assert verdict == PlanVerdict("approved")
    assert "  │ ### a. do a" in shown
    assert "warning: a warning" in shown
    assert shown.count("Approve plan v1?") == 3


async def test_eof_and_quit_decide_nothing() -> None:
    assert (await ask())[0] is None
    assert (await ask("q\n"))[0] is None


async def test_a_rejection_carries_the_feedback() -> None:
    verdict, shown = await ask("r\n", "smaller tasks\n")
    assert verdict == PlanVerdict("rejected", feedback="smaller tasks")
    assert "What should the planner change?" in shown


async def test_an_edit_is_checked_before_it_is_approved() -> None:
    good = "# Plan: g\n\n## Tasks\n\n### a. do a better\n- acceptance: `true`\n"
    bad = "# Plan: g\n\n## Tasks\n\n### a. do a\n"  # no acceptance check
    same = "# Plan: g\n\n## Tasks\n\n### a. do a\n- acceptance: `true`\n"
    verdict, shown = await ask("e\n", "e\n", "e\n", edit=editing(bad, same, good))
    assert "the edited plan is not valid, nothing changed" in shown
    assert "no acceptance check" in shown
    assert "the plan is unchanged" in shown
    assert isinstance(verdict, PlanVerdict)
    assert verdict.decision == "approved"
    assert verdict.plan is not None
    assert verdict.plan.tasks[0].title == "do a better"


async def test_who_decides_without_a_terminal() -> None:
    # (--approve is the session's journaled settings, decided before any approver is
    # asked: tests/plans/test_approval_scope.py.)
    assert plan_approver(interactive=False) is None
    assert isinstance(plan_approver(interactive=True), PlanPrompt)
