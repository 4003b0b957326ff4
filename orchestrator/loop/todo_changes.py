"""Changes to an agent's todo list, checked: what a todo tool asks, turned into the
items it changes. The pure functions `write`, `create` and `update` do that, or refuse
it with the reason (`TodoError`): an unknown id, a cycle, a duplicate id, or starting or
completing an item whose blockers are still open.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import msgspec

from orchestrator.loop.todos import TodoError, TodoItem, TodoList, TodoStatus, id_order


class ItemSpec(Protocol):
    """An item as `todo_write` or `todo_create` gives it, id optional (the tools' argument
    model, `tools.todos.TodoSpec`: this module judges values and imports no schema)."""

    @property
    def id(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def active_form(self) -> str: ...
    @property
    def status(self) -> TodoStatus: ...
    @property
    def blocked_by(self) -> tuple[str, ...]: ...
    @property
    def result(self) -> str: ...
    @property
    def failure(self) -> str: ...


class Change(msgspec.Struct, frozen=True, kw_only=True):
    """What a tool asks of one item (`todo_update`); None leaves a field as it is."""

    id: str
    status: TodoStatus | None = None
    content: str | None = None
    active_form: str | None = None
    add_blocked_by: tuple[str, ...] = ()
    remove_blocked_by: tuple[str, ...] = ()
    result: str | None = None
    failure: str | None = None


def write(todos: TodoList, specs: Sequence[ItemSpec], *, at: int) -> list[TodoItem]:
    """The whole new list of `todo_write`: ids given or assigned (1, 2, ...), checked as
    a whole. Items that keep their id keep their creation time."""
    linked = [i.id for i in todos.items.values() if i.plan_task]
    if linked:
        raise TodoError(
            f"your list holds the plan's tasks ({', '.join(linked)}), which follow the tasks "
            "you delegate for them: todo_write would replace them; add items with "
            "todo_create and change them with todo_update instead"
        )
    given = [s.id for s in specs if s.id]
    duplicates = sorted({i for i in given if given.count(i) > 1}, key=id_order)
    if duplicates:
        raise TodoError(f"duplicate ids in the list: {', '.join(duplicates)}")
    fresh = TodoList()
    taken = set(given)
    counter = 0
    items: dict[str, TodoItem] = {}
    for spec in specs:
        item_id = spec.id
        if not item_id:
            counter += 1
            while str(counter) in taken:
                counter += 1
            item_id = str(counter)
            taken.add(item_id)
        old = todos.items.get(item_id)
        items[item_id] = _item(spec, item_id, created=old.created if old else at, at=at)
    fresh.items = items
    _check(fresh, items.values())
    return list(items.values())


def create(todos: TodoList, spec: ItemSpec, *, at: int) -> TodoItem:
    """A new item for `todo_create`."""
    item_id = spec.id or todos.next_id()
    if item_id in todos.items:
        raise TodoError(f"an item {item_id} already exists ({todos.items[item_id].content!r})")
    item = _item(spec, item_id, created=at, at=at)
    _check(_with(todos, [item]), [item])
    return item


def update(todos: TodoList, change: Change, *, at: int) -> TodoItem:
    """The changed item for `todo_update`."""
    old = todos.items.get(change.id)
    if old is None:
        raise TodoError(f"no item {change.id}; {_known(todos)}")
    if old.plan_task and (
        change.status is not None
        or change.result is not None
        or change.failure is not None
        or change.content is not None
        or change.add_blocked_by
        or change.remove_blocked_by
    ):
        raise TodoError(
            f"item {old.id} is plan task {old.plan_task}: its status follows the task you "
            f"delegate for it (delegate with plan_ref={old.plan_task!r}), and only its "
            "active_form may change here"
        )
    unknown_removals = [b for b in change.remove_blocked_by if b not in old.blocked_by]
    if unknown_removals:
        raise TodoError(f"item {old.id} is not blocked by {', '.join(unknown_removals)}")
    blocked_by = [b for b in old.blocked_by if b not in change.remove_blocked_by]
    blocked_by += [b for b in change.add_blocked_by if b not in blocked_by]
    item = msgspec.structs.replace(
        old,
        **{
            key: value
            for key, value in {
                "status": change.status,
                "content": change.content,
                "active_form": change.active_form,
                "result": change.result,
                "failure": change.failure,
            }.items()
            if value is not None
        }
        | {"blocked_by": tuple(blocked_by), "updated": at},
    )
    if not item.content.strip():
        raise TodoError("an item's content must not be empty")
    _check(_with(todos, [item]), [item])
    return item


def move(todos: TodoList, item_id: str, position: int) -> list[TodoItem]:
    """The whole list in its new order, item `item_id` at `position` (1 is the first;
    past the end is the last): a person reordering the list (`replace` it with these)."""
    if item_id not in todos.items:
        raise TodoError(f"no item {item_id}; {_known(todos)}")
    if position < 1:
        raise TodoError(f"a position counts from 1 (got {position})")
    rest = [item for item in todos.items.values() if item.id != item_id]
    rest.insert(position - 1, todos.items[item_id])
    return rest


def hand_off(todos: TodoList, changed: Sequence[TodoItem], *, at: int) -> TodoItem | None:
    """Serial hand-off: when a change completes an item and nothing is in progress, the
    next pending item that is not blocked (in list order) starts."""
    after = _with(todos, changed)
    if not any(i.status == "completed" for i in changed) or after.current() is not None:
        return None
    for item in after.items.values():
        if item.status == "pending" and not item.plan_task and not after.is_blocked(item):
            return msgspec.structs.replace(item, status="in_progress", updated=at)
    return None


def _item(spec: ItemSpec, item_id: str, *, created: int, at: int) -> TodoItem:
    if not spec.content.strip():
        raise TodoError(f"item {item_id}: content must not be empty")
    return TodoItem(
        id=item_id,
        content=spec.content,
        active_form=spec.active_form,
        status=spec.status,
        blocked_by=tuple(dict.fromkeys(spec.blocked_by)),
        result=spec.result,
        failure=spec.failure,
        created=created,
        updated=at,
    )


def _with(todos: TodoList, items: Iterable[TodoItem]) -> TodoList:
    after = TodoList(goal=todos.goal, items=dict(todos.items))
    for item in items:
        after.items[item.id] = item
    return after


def _known(todos: TodoList) -> str:
    if not todos.items:
        return "the list is empty"
    return "known ids: " + ", ".join(todos.items)


def _check(after: TodoList, changed: Iterable[TodoItem]) -> None:
    """Refuse a list with unknown blockers, a cycle, or a changed item started or
    completed while its blockers are open."""
    for item in after.items.values():
        if item.id in item.blocked_by:
            raise TodoError(f"item {item.id} cannot block itself")
        unknown = [b for b in item.blocked_by if b not in after.items]
        if unknown:
            raise TodoError(
                f"item {item.id} is blocked by unknown {', '.join(unknown)}; {_known(after)}"
            )
    cycle = _find_cycle(after)
    if cycle:
        raise TodoError("blockers would form a cycle: " + " -> ".join(cycle))
    for item in changed:
        if item.status in ("in_progress", "completed"):
            open_ids = after.open_blockers(item)
            if open_ids:
                verb = "start" if item.status == "in_progress" else "complete"
                names = ", ".join(
                    f"{b} ({after.items[b].content!r}, {after.items[b].status})" for b in open_ids
                )
                raise TodoError(f"cannot {verb} item {item.id}: it is blocked by {names}")


def _find_cycle(todos: TodoList) -> list[str]:
    """A cycle of blockers as a path (first id repeated at the end), or []."""
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(item_id: str) -> list[str]:
        state[item_id] = 1
        path.append(item_id)
        for blocker in todos.items[item_id].blocked_by:
            if state.get(blocker) == 1:
                return [*path[path.index(blocker) :], blocker]
            if blocker not in state and blocker in todos.items:
                found = visit(blocker)
                if found:
                    return found
        path.pop()
        state[item_id] = 2
        return []

    for item_id in todos.items:
        if item_id not in state:
            found = visit(item_id)
            if found:
                return found
    return []
