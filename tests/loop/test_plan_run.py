"""The plan's runtime verdicts: which tasks may start, which can never run, and what
each todo shows; a hypothesis property runs whole plans to their end through them."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator import Plan, PlanTask
from orchestrator.loop.plan import scopes_overlap, validate
from orchestrator.loop.plan_run import TODO_STATUS, doomed, ready, todo_status


def task(tid: str, *deps: str, writes: tuple[str, ...] = ()) -> PlanTask:
    return PlanTask(
        id=tid, title=f"task {tid}", depends_on=deps, write_scope=writes, acceptance="true"
    )


PLAN = Plan(
    goal="g",
    tasks=(
        task("a", writes=("src/a.py",)),
        task("b", writes=("src/b.py",)),
        task("c", "a", "b", writes=("src/c.py",)),
        task("d", "c"),
        task("e", writes=("src/",)),  # overlaps a and b, no path between them
    ),
)


def test_tasks_start_when_their_dependencies_complete() -> None:
    assert validate(PLAN)[0].level == "warning"  # e's scope: serialised, not refused
    assert ready(PLAN, {}) == ["a", "b"]  # e waits: it overlaps a and b
    assert ready(PLAN, {"a": "running", "b": "completed"}) == []
    # e overlaps c, which comes first in the plan: it waits for c to end.
    assert ready(PLAN, {"a": "completed", "b": "completed"}) == ["c"]
    states = {"a": "completed", "b": "completed", "c": "running", "e": "waiting_deps"}
    assert ready(PLAN, states) == []
    assert ready(PLAN, {**states, "c": "completed"}) == ["d", "e"]


def test_a_failed_dependency_dooms_its_dependants_with_the_reason() -> None:
    assert doomed(PLAN, {"a": "failed", "b": "completed"}) == {
        "c": "its dependency a failed",
        "d": "its dependency c cannot run (its dependency a failed)",
    }
    assert doomed(PLAN, {"b": "cancelled"})["c"] == "its dependency b cancelled"
    assert doomed(PLAN, {"a": "completed", "b": "completed"}) == {}


@pytest.mark.parametrize(
    ("state", "status"),
    [
        ("", "pending"),
        ("waiting_deps", "pending"),
        ("pending", "pending"),
        ("running", "in_progress"),
        ("waiting_decision", "in_progress"),
        ("waiting_children", "in_progress"),
        ("completed", "completed"),
        ("failed", "failed"),
        ("cancelled", "cancelled"),
    ],
)
def test_a_todo_shows_its_tasks_state(state: str, status: str) -> None:
    assert todo_status(state) == status


def test_every_task_state_has_a_todo_status() -> None:
    from typing import get_args

    from orchestrator.state import TaskState

    assert set(get_args(TaskState)) | {"", "waiting_deps"} == set(TODO_STATUS)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    count = draw(st.integers(1, 8))
    ids = [f"t{i}" for i in range(count)]
    tasks = []
    for index, tid in enumerate(ids):
        deps = draw(st.lists(st.sampled_from(ids[:index]), unique=True)) if index else []
        writes = draw(st.lists(st.sampled_from(["a", "b", "a/x", "c/", "."]), max_size=2))
        tasks.append(task(tid, *deps, writes=tuple(writes)))
    return Plan(goal="g", tasks=tuple(tasks))


@given(plans(), st.randoms(use_true_random=False))
def test_a_plan_runs_to_its_end_in_dependency_order_never_two_overlapping(
    plan: Plan, rng: random.Random
) -> None:
    states: dict[str, str] = {}
    finished: list[str] = []
    for _ in range(4 * len(plan.tasks)):
        for tid in ready(plan, states):
            states[tid] = "running"
        running = [t for t in plan.tasks if states.get(t.id) == "running"]
        for one in running:  # never two at once with overlapping scopes
            for other in running:
                if one is not other:
                    assert not scopes_overlap(one.write_scope, other.write_scope)
        if not running:
            break
        done = rng.choice(running)
        deps_done = all(states.get(d) == "completed" for d in done.depends_on)
        assert deps_done
        states[done.id] = "completed"
        finished.append(done.id)
    assert sorted(finished) == sorted(t.id for t in plan.tasks)
    assert doomed(plan, states) == {}
