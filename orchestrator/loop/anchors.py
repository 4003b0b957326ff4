"""What a compacted context is given back exactly, from the session's records rather than
from a summary's prose: the goal, the plan, the agent's todos, the tasks of its subtree,
the mail it has not read or not answered, the files it touched. The runtime gathers these
values from the fold (team/compactor.py); this module only renders them, within a budget.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

HEADER = (
    "[Restored from the session's records after a compaction: these lists are exact and "
    "current; where the summary above disagrees, they are right.]"
)


class TodoAnchor(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    content: str
    status: str
    blocked_by: tuple[str, ...] = ()
    note: str = ""  # its result, or why it failed

    @property
    def settled(self) -> bool:
        return self.status in ("completed", "cancelled", "failed")


class TaskAnchor(msgspec.Struct, frozen=True, kw_only=True):
    task_id: str
    agent_type: str
    state: str
    description: str
    progress: str = ""
    questions: tuple[str, ...] = ()  # open questions it asked, unanswered
    settled: bool = False


class FileAnchor(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    digest: str  # of its content now ("" when it no longer exists)


class Anchors(msgspec.Struct, frozen=True, kw_only=True):
    goal: str
    plan: str = ""
    todos: Sequence[TodoAnchor] = ()
    tasks: Sequence[TaskAnchor] = ()
    mail: Sequence[str] = ()  # undelivered or unanswered messages, one line each
    said: Sequence[str] = ()  # what its owner (the user, for the main agent) wrote, verbatim
    files: Sequence[FileAnchor] = ()
    read: Sequence[tuple[str, str]] = ()  # files read, each with its newest read's ref
    hooks: Sequence[str] = ()  # what the person's `pre_compact` hooks asked to keep (docs/hooks.md)


def render(anchors: Anchors, budget: int) -> str:
    """The anchors as one text of at most about `budget` characters: everything listed
    when it fits; else settled tasks and done todos are counted, not listed; else the
    longest lists are cut, each saying how many it left out."""
    full = _render(anchors, list_settled=True, limit=None)
    if len(full) <= budget:
        return full
    counted = _render(anchors, list_settled=False, limit=None)
    if len(counted) <= budget:
        return counted
    limit = 40
    while limit > 1:
        text = _render(anchors, list_settled=False, limit=limit)
        if len(text) <= budget:
            return text
        limit //= 2
    return _render(anchors, list_settled=False, limit=1)


def _render(anchors: Anchors, *, list_settled: bool, limit: int | None) -> str:
    parts = [HEADER, f"## Goal\n{anchors.goal or '(none recorded)'}"]
    if anchors.said:
        quoted = [f"> {text}".replace("\n", "\n> ") for text in anchors.said]
        if limit is not None and len(quoted) > limit:  # the newest are kept
            quoted = [f"(and {len(quoted) - limit} earlier ones)", *quoted[-limit:]]
        parts.append("## What the user (or your owner) wrote, verbatim\n" + "\n".join(quoted))
    if anchors.hooks:  # the person's own words, kept whole (a hook's text is short)
        parts.append("## Kept by the person's hooks\n" + "\n\n".join(anchors.hooks))
    if anchors.plan:
        parts.append(f"## Plan\n{anchors.plan}")
    parts.append(_todos(anchors.todos, list_settled, limit))
    if anchors.tasks:
        parts.append(_tasks(anchors.tasks, list_settled, limit))
    if anchors.mail:
        lines = _cut([f"- {line}" for line in anchors.mail], limit, "messages")
        parts.append("## Mail not yet read or answered\n" + "\n".join(lines))
    if anchors.files:
        lines = [f"- {f.path} ({f.digest[:12] if f.digest else 'deleted'})" for f in anchors.files]
        parts.append(
            "## Files touched (content hash now)\n" + "\n".join(_cut(lines, limit, "files"))
        )
    if anchors.read:
        lines = [f'- {path} (recall("{ref}") shows what it read)' for path, ref in anchors.read]
        parts.append(
            "## Files you read (read one again only if it may have changed)\n"
            + "\n".join(_cut(lines, limit, "files"))
        )
    return "\n\n".join(parts)


def _todos(todos: Sequence[TodoAnchor], list_settled: bool, limit: int | None) -> str:
    if not todos:
        return "## Your todo list\n(empty)"
    shown = [t for t in todos if list_settled or not t.settled]
    lines = []
    for todo in shown:
        line = f"- [{todo.status}] {todo.id}: {todo.content}"
        if todo.blocked_by:
            line += f" (blocked by {', '.join(todo.blocked_by)})"
        if todo.note:
            line += f" -> {todo.note}"
        lines.append(line)
    lines = _cut(lines, limit, "todos")
    hidden = len(todos) - len(shown)
    if hidden:
        lines.append(f"- and {hidden} done, cancelled or failed (not listed)")
    return "## Your todo list\n" + "\n".join(lines)


def _tasks(tasks: Sequence[TaskAnchor], list_settled: bool, limit: int | None) -> str:
    shown = [t for t in tasks if list_settled or not t.settled]
    lines = []
    for task in shown:
        line = f"- {task.task_id} ({task.agent_type}, {task.state}): {task.description}"
        if task.progress:
            line += f"; latest progress: {task.progress}"
        lines.append(line)
        lines.extend(f"  - open question: {q}" for q in task.questions)
    lines = _cut(lines, limit, "lines")
    hidden = len(tasks) - len(shown)
    if hidden:
        lines.append(f"- and {hidden} settled tasks (not listed)")
    return "## Delegated tasks (yours and theirs)\n" + "\n".join(lines)


def _cut(lines: list[str], limit: int | None, what: str) -> list[str]:
    if limit is None or len(lines) <= limit:
        return lines
    return [*lines[:limit], f"- ... and {len(lines) - limit} more {what}"]
