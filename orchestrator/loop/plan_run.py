"""A plan's verdicts, pure over the plan and its tasks' states: which plan tasks may start
now and which can never run because a dependency failed (`ready`, `doomed`: the rules
for a whole plan, which the runtime keeps task by task with `loop/deps.py`'s `decide`,
and a property test checks here), the status each task's todo shows (`todo_status`, the
fold's), what a new version changes (`diff`, `kept_problems`: the re-plan's), and what
it adds that an approval given in advance does not cover (`unseen`).

A plan task's state is its task record's (`state/tasks.py`: `pending`, `running`,
`waiting_decision`, `waiting_children`, `completed`, `failed`, `cancelled`), or
`waiting_deps` (delegated, waiting for its dependencies), or absent (not delegated yet).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Literal

import msgspec

from orchestrator.loop.plan import Plan, PlanTask, Problem, scopes_overlap

TodoStatus = Literal["pending", "in_progress", "completed", "cancelled", "failed"]

TODO_STATUS: Mapping[str, TodoStatus] = {
    "": "pending",
    "waiting_deps": "pending",
    "pending": "pending",
    "running": "in_progress",
    "waiting_decision": "in_progress",
    "waiting_children": "in_progress",
    "completed": "completed",
    "failed": "failed",
    "cancelled": "cancelled",
}
"""The status a plan task's todo shows, by the task's state: the plan, the todo list and
the task tree cannot disagree, since the todo's status is read from the task."""

NOT_STARTED = frozenset({"", "waiting_deps"})
LIVE = frozenset({"pending", "running", "waiting_decision", "waiting_children"})
ENDED_BADLY = frozenset({"failed", "cancelled"})


def todo_status(state: str) -> TodoStatus:
    """The todo status of a plan task in `state` ("" : not delegated yet)."""
    return TODO_STATUS[state]


def ready(plan: Plan, states: Mapping[str, str]) -> list[str]:
    """The plan tasks that may start now, in plan order: not started, every dependency
    completed, and no write scope overlapping a task that is live or starts before it
    (in plan order) without a dependency path between them: such tasks run one after
    the other, not refused."""
    live = [t for t in plan.tasks if states.get(t.id, "") in LIVE]
    chosen: list[PlanTask] = []
    for task in plan.tasks:
        if states.get(task.id, "") not in NOT_STARTED:
            continue
        if any(states.get(dep, "") != "completed" for dep in task.depends_on):
            continue
        if any(scopes_overlap(task.write_scope, other.write_scope) for other in live + chosen):
            continue
        chosen.append(task)
    return [t.id for t in chosen]


def doomed(plan: Plan, states: Mapping[str, str]) -> dict[str, str]:
    """The plan tasks not started that can never run, because a dependency failed or
    was cancelled (or is itself doomed), each with the reason its owner is told."""
    found: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for task in plan.tasks:
            if task.id in found or states.get(task.id, "") not in NOT_STARTED:
                continue
            for dep in task.depends_on:
                state = states.get(dep, "")
                if state in ENDED_BADLY:
                    found[task.id] = f"its dependency {dep} {state}"
                elif dep in found:
                    found[task.id] = f"its dependency {dep} cannot run ({found[dep]})"
                else:
                    continue
                changed = True
                break
    return found


class PlanDiff(msgspec.Struct, frozen=True):
    """What a new version of a plan changes, by task id, in the new plan's order (dropped:
    the old plan's)."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()

    def describe(self) -> str:
        parts = [
            f"{name} {', '.join(ids)}"
            for name, ids in (
                ("added", self.added),
                ("changed", self.changed),
                ("dropped", self.dropped),
                ("kept", self.kept),
            )
            if ids
        ]
        return "; ".join(parts) or "no task changed"


def diff(old: Plan, new: Plan) -> PlanDiff:
    """The tasks `new` adds, changes (same id, any field different), drops and keeps."""
    before = {t.id: t for t in old.tasks}
    after = {t.id for t in new.tasks}
    added = tuple(t.id for t in new.tasks if t.id not in before)
    changed = tuple(t.id for t in new.tasks if t.id in before and before[t.id] != t)
    kept = tuple(t.id for t in new.tasks if t.id in before and before[t.id] == t)
    dropped = tuple(t.id for t in old.tasks if t.id not in after)
    return PlanDiff(added, changed, dropped, kept)


def kept_problems(old: Plan, new: Plan, completed: Collection[str]) -> list[Problem]:
    """A re-plan keeps the work done: each completed task of `old` stays in `new`
    unchanged (its id, title, scope and check), or the new version is refused."""
    found: list[Problem] = []
    after = {t.id: t for t in new.tasks}
    for task in old.tasks:
        if task.id not in completed:
            continue
        if task.id not in after:
            found.append(Problem("error", task.id, "completed, so it must stay in the plan"))
        elif after[task.id] != task:
            found.append(Problem("error", task.id, "completed, so it must stay unchanged"))
    return found


def unseen(plan: Plan, seen: Iterable[Plan]) -> list[str]:
    """What `plan` adds to the plans a person has `seen`, which an approval of those does
    not cover: each task whose id none of them has, and each command none of them runs
    (the only commands a plan runs are its acceptance checks). Empty: `plan` asks to run
    nothing new (it may still reword, reorder, rescope or drop tasks)."""
    seen = list(seen)
    ids = {t.id for p in seen for t in p.tasks}
    commands = {t.acceptance for p in seen for t in p.tasks if t.acceptance}
    added = [f"task {t.id}" for t in plan.tasks if t.id not in ids]
    added += [
        f"command {t.acceptance!r} ({t.id}'s acceptance check)"
        for t in plan.tasks
        if t.acceptance and t.acceptance not in commands
    ]
    return added
