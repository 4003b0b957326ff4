"""A plan's size is capped (tasks, bytes), and overlap warnings are one per group of
tasks, not one per pair (issue 37, item 6)."""

from __future__ import annotations

import pytest

from orchestrator.loop.deps import closing_cycle
from orchestrator.loop.plan import Plan, PlanError, PlanLimits, PlanTask, check, replan_bound


def plan(n: int, scope: str = "src/", description: str = "") -> Plan:
    tasks = tuple(
        PlanTask(id=f"t{i}", title="x", description=description, write_scope=(scope,),
                 acceptance="true")
        for i in range(n)
    )  # fmt: skip
    return Plan(goal="g", tasks=tasks)


def test_400_tasks_sharing_a_scope_make_one_warning() -> None:
    [warning] = check(plan(400), PlanLimits(max_tasks=400, max_bytes=1 << 20))
    assert str(warning).startswith("t0: tasks t0, t1, t2,")
    assert "t19 and 380 more (400 tasks) write overlapping scopes (src/)" in str(warning)


def test_two_groups_make_two_warnings_and_a_pair_reads_as_before() -> None:
    tasks = (*plan(2, "a/").tasks, *(t.__class__(**{**_fields(t), "id": "b" + t.id[1:],
             "write_scope": ("b/",)}) for t in plan(3, "b/").tasks))  # fmt: skip
    warnings = [str(w) for w in check(Plan(goal="g", tasks=tasks))]
    assert warnings == [
        "t0: t0 and t1 may run at the same time and their write scopes overlap (a/): they "
        "will run one after the other",
        "b0: tasks b0, b1 and b2 write overlapping scopes (b/) and some of them may run at "
        "the same time: those will run one after the other",
    ]


def _fields(task: PlanTask) -> dict[str, object]:
    return {f: getattr(task, f) for f in task.__struct_fields__}


def test_a_plan_past_its_limits_is_refused_naming_the_limit_and_the_figure() -> None:
    with pytest.raises(PlanError) as caught:
        check(plan(201))
    assert [str(p) for p in caught.value.problems] == [
        "the plan has 201 tasks, more than the limit of 200 ([plan] max_tasks)"
    ]
    with pytest.raises(PlanError) as caught:
        check(plan(10, description="x" * 30_000))
    [problem] = caught.value.problems
    assert str(problem).startswith("the plan is 301,")
    assert str(problem).endswith("bytes, more than the limit of 262,144 ([plan] max_bytes)")


@pytest.mark.parametrize(
    ("of_task", "of_session", "refused"),
    [(0, 0, ""), (2, 9, ""), (3, 3, "max_replans_per_task = 3"), (0, 10, "max_replans = 10")],
)
def test_replan_bound(of_task: int, of_session: int, refused: str) -> None:
    said = replan_bound(of_task, of_session, PlanLimits())
    assert (refused in said) if refused else said == ""


@pytest.mark.parametrize(
    ("waits_for", "edges", "cycle"),
    [
        (["q"], {"q": ["p"]}, ["p", "q", "p"]),
        (["q"], {"q": ["r"], "r": ["p"]}, ["p", "q", "r", "p"]),
        (["q"], {"q": ["r"], "r": []}, []),
        (["q", "s"], {"q": [], "s": ["q", "p"]}, ["p", "s", "p"]),
    ],
)
def test_closing_cycle(waits_for: list[str], edges: dict[str, list[str]], cycle: list[str]) -> None:
    assert closing_cycle("p", waits_for, edges) == cycle
