"""An agent's todo list: items with dependencies, the record that changes them, and the
rules every change must keep.

Each agent (the main agent, each subagent) has one list, folded from `todos_changed`
records into `state.todos[agent]`, live and on resume alike. `todos/<agent>.json` is a
view of it for people and tools; resume never reads it.

"Blocked" is computed, never stored: an item is blocked while any of its blockers is not
`completed`. `blocked_by` is what a change says; `blocks` is its reverse, kept by the
fold. What a tool asks of the list is checked in todo_changes.py.
"""

import time
from collections.abc import Iterable, Mapping
from typing import Literal

import msgspec

from orchestrator.errors import OrchestratorError
from orchestrator.eventbase import EventBase
from orchestrator.messages import Value, plain

TodoStatus = Literal["pending", "in_progress", "completed", "cancelled", "failed"]
OPEN: frozenset[str] = frozenset({"pending", "in_progress"})
"""Statuses of work still to do."""


class TodoError(OrchestratorError, ValueError):
    """A change the list refuses; the message is what the model should read."""


def now_ms() -> int:
    return int(time.time() * 1000)


class TodoItem(Value, frozen=True):
    """One item. `active_form` is the "doing it now" phrasing ("Running the tests")."""

    id: str
    content: str
    active_form: str = ""
    status: TodoStatus = "pending"
    blocked_by: tuple[str, ...] = ()
    result: str = ""  # what completing it produced, in a line
    failure: str = ""  # why it failed (or was cancelled)
    created: int = 0  # wall time, ms
    updated: int = 0
    # The plan task this item is (the builder's list): its status follows that task's
    # record, never a todo tool (state/small.py; docs/plans.md).
    plan_task: str = ""


class TodosChanged(EventBase, frozen=True, tag="todos_changed"):
    """Record: items of `agent`'s list created or changed (each whole), by the call `ref`.
    `replace`: the list is now exactly `items` (`todo_write`). `goal`: the list's goal
    line, when the change sets it."""

    ref: str = ""
    replace: bool = False
    goal: str | None = None
    items: tuple[TodoItem, ...] = ()
    # The plan version whose tasks this change makes the list's (the builder's), 0 for
    # none: once folded, that version's handoff is done (team/planning.py).
    plan_version: int = 0


TodoRecords = TodosChanged
"""The todo lists' records (see `Record` in state/events.py)."""


class TodoList(msgspec.Struct):
    """One agent's list, in the order items were created."""

    goal: str = ""
    items: dict[str, TodoItem] = msgspec.field(default_factory=dict)
    blocks: dict[str, list[str]] = msgspec.field(default_factory=dict)  # id -> ids it blocks
    changed_seq: int = 0  # the seq of its last change
    refs: set[str] = msgspec.field(default_factory=set)  # calls of the last reply that changed it

    @classmethod
    def of(
        cls, goal: str, items: Iterable[TodoItem], *, changed_seq: int, refs: Iterable[str]
    ) -> "TodoList":
        """A list as a snapshot keeps it (`blocks` derived again)."""
        todos = cls(goal=goal, items={item.id: item for item in items}, changed_seq=changed_seq)
        todos.blocks = _reverse(todos.items.values())
        todos.refs = set(refs)
        return todos

    def apply(self, seq: int, record: TodosChanged) -> None:
        if record.replace:
            self.items = {}
        if record.goal is not None:
            self.goal = record.goal
        for item in record.items:
            self.items[item.id] = item
        self.blocks = _reverse(self.items.values())
        self.changed_seq = seq
        step = record.ref.partition(".")[0]
        if record.ref and not any(r.partition(".")[0] == step for r in self.refs):
            self.refs = set()  # a newer reply: only its calls can run again after a crash
        if record.ref:
            self.refs.add(record.ref)

    # --- reading ---------------------------------------------------------------------

    def open_blockers(self, item: TodoItem) -> list[str]:
        """The ids of the item's blockers that are not completed."""
        return [b for b in item.blocked_by if _status(self.items, b) != "completed"]

    def is_blocked(self, item: TodoItem) -> bool:
        return bool(self.open_blockers(item))

    def workable(self) -> list[TodoItem]:
        """Open items the agent can work on now: in progress, or pending and unblocked."""
        return [
            item
            for item in self.items.values()
            if item.status == "in_progress"
            or (item.status == "pending" and not self.is_blocked(item))
        ]

    def open_items(self) -> list[TodoItem]:
        return [item for item in self.items.values() if item.status in OPEN]

    def stuck_on_failed(self, item: TodoItem) -> list[str]:
        """The failed or cancelled items an open item waits on, however indirectly (work
        that will not finish unless someone changes the list)."""
        found: list[str] = []
        seen: set[str] = set()
        stack = list(item.blocked_by)
        while stack:
            blocker_id = stack.pop()
            if blocker_id in seen:
                continue
            seen.add(blocker_id)
            blocker = self.items.get(blocker_id)
            if blocker is None:
                continue
            if blocker.status in ("failed", "cancelled"):
                found.append(blocker_id)
            elif blocker.status != "completed":
                stack.extend(blocker.blocked_by)
        return sorted(found, key=id_order)

    def progress(self) -> tuple[int, int]:
        """(completed, total), cancelled items not counted."""
        counted = [i for i in self.items.values() if i.status != "cancelled"]
        return sum(i.status == "completed" for i in counted), len(counted)

    def current(self) -> TodoItem | None:
        return next((i for i in self.items.values() if i.status == "in_progress"), None)

    def next_id(self) -> str:
        numbers = [int(i) for i in self.items if i.isdigit()]
        return str(max(numbers, default=0) + 1)

    def view(self) -> dict[str, object]:
        """The list as plain data (`todos/<agent>.json`, `sessions show --json`)."""
        done, total = self.progress()
        return {
            "goal": self.goal,
            "progress": {"completed": done, "total": total},
            "items": [
                {
                    **plain(item),
                    "blocks": self.blocks.get(item.id, []),
                    "blocked": self.is_blocked(item),
                }
                for item in self.items.values()
            ],
        }


def _status(items: Mapping[str, TodoItem], item_id: str) -> str:
    item = items.get(item_id)
    return item.status if item is not None else "missing"


def _reverse(items: Iterable[TodoItem]) -> dict[str, list[str]]:
    blocks: dict[str, list[str]] = {}
    for item in items:
        for blocker in item.blocked_by:
            blocks.setdefault(blocker, []).append(item.id)
    return blocks


def id_order(item_id: str) -> tuple[int, str]:
    return (int(item_id), "") if item_id.isdigit() else (1 << 30, item_id)


# --- rendering ---------------------------------------------------------------------------------


def render(todos: TodoList) -> str:
    """The list as the model (and a person) reads it, one line per item."""
    if not todos.items:
        return "The todo list is empty." + (f" Goal: {todos.goal}" if todos.goal else "")
    done, total = todos.progress()
    lines = []
    if todos.goal:
        lines.append(f"Goal: {todos.goal}")
    lines.append(f"Tasks {done}/{total}")
    lines.extend(line(todos, item) for item in todos.items.values())
    return "\n".join(lines)


def line(todos: TodoList, item: TodoItem) -> str:
    """One item: `[3] [blocked by 1, 2] Write the tests`."""
    mark = _mark(todos, item)
    text = f"[{item.id}] [{mark}] {item.content}"
    if item.status == "in_progress" and item.active_form:
        text += f" ({item.active_form})"
    if item.status == "completed" and item.result:
        text += f": {item.result}"
    if item.status in ("failed", "cancelled") and item.failure:
        text += f": {item.failure}"
    return text


def _mark(todos: TodoList, item: TodoItem) -> str:
    if item.status == "pending" and todos.is_blocked(item):
        return "blocked by " + ", ".join(todos.open_blockers(item))
    return {
        "pending": "todo",
        "in_progress": "doing",
        "completed": "done",
        "cancelled": "cancelled",
        "failed": "failed",
    }[item.status]
