"""The todo tools: `todo_write` (the whole list at once), `todo_create`, `todo_update`,
`todo_list` and `todo_get`. Every agent of a team has them; a plain agent (a library
`run` given no agent types) when given them (`orc.todo_tools()`).

Each returns the list rendered compactly, so the model sees the new state. A change is
checked by `todos.py` (unknown ids, cycles, blocked items started or completed are refused
with the reason) and journaled as one `todos_changed` record through the `TodoHost` in
the call's context (the team's oversight). Each changing tool is idempotent by its call's ref: run
again after a crash, it finds its change already folded and changes nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.errors import ToolFailed
from orchestrator.loop.todo_changes import Change, create, hand_off, update, write
from orchestrator.loop.todos import (
    TodoError,
    TodoItem,
    TodoList,
    TodosChanged,
    TodoStatus,
    line,
    now_ms,
    render,
)
from orchestrator.tools.base import AnyTool, TodoHost, Tool, ToolContext, ToolOutput


class TodoSpec(BaseModel, frozen=True, extra="forbid"):
    """An item as `todo_write` or `todo_create` gives it (id optional)."""

    id: str = ""
    content: str
    active_form: str = ""
    status: TodoStatus = "pending"
    blocked_by: tuple[str, ...] = ()
    result: str = ""
    failure: str = ""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _TodoTool(Tool[Any]):
    idempotent = True
    approval = False
    journaled = True

    async def _change(
        self,
        ctx: ToolContext,
        make: Callable[[TodoList, int], list[TodoItem]],
        *,
        replace: bool = False,
        goal: str | None = None,
        said: str,
    ) -> ToolOutput:
        """Journal the items `make` returns for the agent's list (checked by todos.py; a
        refusal leaves the list as it was), with the serial hand-off when it is on."""
        host = _host(ctx)
        todos = host.todos(ctx.agent)
        if ctx.call and ctx.call in todos.refs:
            # Run again after a crash: its change is already in the list.
            return ToolOutput(f"{said} (already recorded)\n{render(todos)}")
        at = now_ms()
        try:
            items = make(todos, at)
        except TodoError as exc:
            raise ToolFailed(f"refused: {exc}; the list is unchanged") from None
        note = ""
        if host.serial(ctx.agent):
            before = TodoList(goal=todos.goal) if replace else todos
            started = hand_off(before, items, at=at)
            if started is not None:
                # In place: with `replace`, the record's order is the list's order.
                replaced = [started if i.id == started.id else i for i in items]
                items = replaced if started in replaced else [*items, started]
                note = (
                    f"\nNext (serial): item {started.id} is now in progress: "
                    f"{started.content}. Work on it now."
                )
        record = TodosChanged(
            agent=ctx.agent, ref=ctx.call, replace=replace, goal=goal, items=tuple(items)
        )
        await host.change_todos(record)
        return ToolOutput(f"{said}{note}\n{render(host.todos(ctx.agent))}")


def _host(ctx: ToolContext) -> TodoHost:
    """The session's todo lists, which the team puts in every call's context."""
    if ctx.todos is None:
        raise ToolFailed("no todo list here: the todo tools need a session's team")
    return ctx.todos


class TodoWriteArgs(_Args):
    todos: list[TodoSpec] = Field(
        description="The whole list, in order. Give each item an id to keep it stable "
        "(omit ids to have 1, 2, ... assigned); blocked_by names ids of this list."
    )
    goal: str | None = Field(default=None, description="What the list achieves, in a line.")


class TodoWrite(_TodoTool):
    name = "todo_write"
    description = (
        "Replace your whole todo list. Plan multi-step work with it before you start, keep "
        "exactly one item in_progress, and mark each item completed as soon as it is done. "
        "An item blocked by open items cannot be started or completed."
    )
    args_model = TodoWriteArgs

    async def run(self, args: TodoWriteArgs, ctx: ToolContext) -> ToolOutput:
        return await self._change(
            ctx,
            lambda todos, at: write(todos, args.todos, at=at),
            replace=True,
            goal=args.goal,
            said=f"todo list written ({len(args.todos)} items)",
        )


class TodoCreateArgs(_Args):
    content: str = Field(description="What to do, imperative: 'Run the tests'.")
    active_form: str = Field(default="", description="The doing-it-now form: 'Running the tests'.")
    id: str = Field(default="", description="A short id; omit to get the next number.")
    blocked_by: list[str] = Field(default_factory=list, description="Ids that must finish first.")
    status: TodoStatus = "pending"


class TodoCreate(_TodoTool):
    name = "todo_create"
    description = "Add one item to your todo list."
    args_model = TodoCreateArgs

    async def run(self, args: TodoCreateArgs, ctx: ToolContext) -> ToolOutput:
        spec = TodoSpec(
            id=args.id,
            content=args.content,
            active_form=args.active_form,
            status=args.status,
            blocked_by=tuple(args.blocked_by),
        )
        return await self._change(
            ctx,
            lambda todos, at: [create(todos, spec, at=at)],
            said=f"item {args.id or _host(ctx).todos(ctx.agent).next_id()} added",
        )


class TodoUpdateArgs(_Args):
    id: str
    status: TodoStatus | None = None
    content: str | None = None
    active_form: str | None = None
    add_blocked_by: list[str] = Field(default_factory=list)
    remove_blocked_by: list[str] = Field(default_factory=list)
    result: str | None = Field(default=None, description="What completing it produced.")
    failure: str | None = Field(default=None, description="Why it failed or was cancelled.")


class TodoUpdate(_TodoTool):
    name = "todo_update"
    description = (
        "Change one item: its status (pending, in_progress, completed, cancelled, failed), "
        "content, blockers, or the result or failure reason."
    )
    args_model = TodoUpdateArgs

    async def run(self, args: TodoUpdateArgs, ctx: ToolContext) -> ToolOutput:
        change = Change(
            id=args.id,
            status=args.status,
            content=args.content,
            active_form=args.active_form,
            add_blocked_by=tuple(args.add_blocked_by),
            remove_blocked_by=tuple(args.remove_blocked_by),
            result=args.result,
            failure=args.failure,
        )
        return await self._change(
            ctx, lambda todos, at: [update(todos, change, at=at)], said=f"item {args.id} updated"
        )


class TodoListArgs(_Args):
    pass


class TodoListing(_TodoTool):
    name = "todo_list"
    description = "Show your todo list with each item's status and blockers."
    args_model = TodoListArgs
    read_only = True

    async def run(self, args: TodoListArgs, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(render(_host(ctx).todos(ctx.agent)))


class TodoGetArgs(_Args):
    id: str


class TodoGet(_TodoTool):
    name = "todo_get"
    description = "Show one item of your todo list in full."
    args_model = TodoGetArgs
    read_only = True

    async def run(self, args: TodoGetArgs, ctx: ToolContext) -> ToolOutput:
        todos = _host(ctx).todos(ctx.agent)
        item = todos.items.get(args.id)
        if item is None:
            known = ", ".join(todos.items) or "none (the list is empty)"
            raise ToolFailed(f"no item {args.id}; known ids: {known}")
        lines = [line(todos, item)]
        if item.active_form:
            lines.append(f"active form: {item.active_form}")
        if item.blocked_by:
            lines.append("blocked by: " + ", ".join(item.blocked_by))
        if todos.blocks.get(item.id):
            lines.append("blocks: " + ", ".join(todos.blocks[item.id]))
        return ToolOutput("\n".join(lines) + "\n\n" + render(todos))


TODO_TOOLS: tuple[type[_TodoTool], ...] = (TodoWrite, TodoCreate, TodoUpdate, TodoListing, TodoGet)


def todo_tools() -> list[AnyTool]:
    """The five todo tools, for `tools=` (`[*orc.todo_tools(), lookup]`): each reads and
    changes the calling agent's list in the session it runs in."""
    return [tool() for tool in TODO_TOOLS]
