"""Whether a task that waits for its dependencies may start, must go on waiting, or can
never run: one pure function over plain values, which the scheduler gathers from the task
records and acts on (`team/scheduler.py`).

A task delegated with `after` (task ids, plan refs) waits in `waiting_deps` until every
dependency has `completed`; a plan task (`serialise`) also waits while its write scope
overlaps a live task's. A dependency that `failed` or was `cancelled` dooms it: it is
cancelled, with a reason naming that dependency, and so are the tasks waiting for it in
turn (the root of the cascade is named to them too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

ENDED_BADLY = frozenset({"failed", "cancelled"})


@dataclass(frozen=True)
class Dependency:
    """One dependency of a waiting task, as its states stand.

    `label`: how it is named to the model (`t3`, `plan task build (t2)`); `task`: its
    task id ("" for a plan task not delegated yet); `state`: that task's state (""
    likewise); `root`, `root_state`: when it was itself cancelled because a dependency
    of its own ended badly, that task and its state."""

    label: str
    task: str = ""
    state: str = ""
    root: str = ""
    root_state: str = ""


Action = Literal["start", "wait", "cancel"]


@dataclass(frozen=True)
class Verdict:
    """`start`: every dependency completed and the scope is clear; `wait`: `reason` says
    for what; `cancel`: `reason` says which dependency ended badly, and `root` is the
    task whose failure or cancellation began it (recorded with the cancellation)."""

    action: Action
    reason: str = ""
    root: str = ""
    scope_only: bool = False  # `wait` for the scope conflict alone: its dependencies are done


def ended(state: str) -> str:
    """`failed`, `was cancelled`: how a dependency's bad end reads in a reason."""
    return "was cancelled" if state == "cancelled" else state


def decide(dependencies: Sequence[Dependency], *, conflict: str = "") -> Verdict:
    """The verdict on a waiting task: `dependencies` in the order it named them;
    `conflict`: a live task whose write scope overlaps its own ("" for none), when it
    waits out such conflicts (a plan task)."""
    for dep in dependencies:
        if dep.state in ENDED_BADLY:
            reason = f"its dependency {dep.label} {ended(dep.state)}"
            if dep.root and dep.root != dep.task:
                reason += f" because {dep.root} {ended(dep.root_state)}"
            return Verdict("cancel", reason, dep.root or dep.task)
    unmet = [dep.label for dep in dependencies if dep.state != "completed"]
    if not unmet and not conflict:
        return Verdict("start")
    parts = []
    if unmet:
        parts.append("waits for " + ", ".join(unmet))
    if conflict:
        parts.append(f"waits for live task {conflict} to end (their write scopes overlap)")
    return Verdict("wait", "; ".join(parts), scope_only=not unmet)


def closing_cycle(
    start: str, waits_for: Sequence[str], edges: Mapping[str, Sequence[str]]
) -> list[str]:
    """The cycle a new node `start` that waits for `waits_for` would close, as
    `[start, ..., start]` (each waits for the next), or [] when it closes none. `edges`:
    what each node waits for now. Such a cycle never ends: each of its tasks waits for
    the next to complete, so none of them ever starts."""
    parent: dict[str, str] = {}
    stack = [(start, node) for node in waits_for]
    while stack:
        before, node = stack.pop()
        if node in parent:
            continue
        parent[node] = before
        if node == start:
            path = [start]
            node = before
            while node != start:
                path.append(node)
                node = parent[node]
            return [start, *reversed(path[1:]), start]
        stack += [(node, nxt) for nxt in edges.get(node, ()) if nxt not in parent]
    return []
