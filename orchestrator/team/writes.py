"""The checks on what a task writes: which task changed which file in this run (kept in
memory only), the writes a task reports against those its tools made, and a shell
command's changes outside its task's write scope or to a file another live task wrote,
reported to the task's owner.

A team knows its own tasks. A task whose team runs beside others (a task on a worker of
the dbos engine, in a team of its own) is also told of the others by an `OtherTasks`
(engine/other_tasks.py reads them from the engine's database)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import msgspec
import trio

from orchestrator.messages import AssistantMessage, ToolResult
from orchestrator.state.tasks import in_scope, now_ms
from orchestrator.team.port import SessionLike
from orchestrator.team.postbox import Postbox
from orchestrator.tools.permissions import string_argument


class OtherWrites(msgspec.Struct, frozen=True):
    """What tasks beyond a team's own are known to write: each one's write scope (by task
    id, the tasks that have one), and the files each changed, with when (by path, then
    task id: the wall time, in ms, of the record of its latest change)."""

    scopes: Mapping[str, tuple[str, ...]]
    wrote: Mapping[str, Mapping[str, int]]

    def claims(self, path: str, agent: str, since_ms: int) -> bool:
        """Whether a task other than `agent` may have made a change to `path` seen after
        a command that started at `since_ms` (wall time): the path is in its write scope,
        or it changed the file since then."""
        wrote = self.wrote.get(_rel(path), {})
        if any(task != agent and at >= since_ms for task, at in wrote.items()):
            return True
        return any(task != agent and in_scope(path, s) for task, s in self.scopes.items())


class OtherTasks(Protocol):
    """The other tasks of a team's session, wherever they run, as far as they are known
    now (read once per shell command that changed anything: it may take a query)."""

    async def writes(self) -> OtherWrites: ...


class Writes:
    """Who wrote what, for the tasks of one team (and the `others` of its session, when
    they run beyond it)."""

    def __init__(
        self, session: SessionLike, postbox: Postbox, others: OtherTasks | None = None
    ) -> None:
        self._session = session
        self._postbox = postbox
        self._others = others
        # path -> the tasks that changed it in this run, and when (trio time)
        self._writers: dict[str, dict[str, float]] = {}

    def check_files(self, agent: str, data: dict[str, Any]) -> dict[str, Any]:
        """The files a subagent's tools changed, against those it lists, and those of
        them outside its write scope (the facts of its results: durable)."""
        changed = self.files_written(agent)
        listed = {_rel(p) for p in data.get("files_changed") or ()}
        task = self._session.state.tasks.get(agent)
        scope = task.write_scope if task is not None else None
        return {
            "unlisted_changes": sorted(changed - listed),
            "unchanged_listed": sorted(listed - changed) if changed or listed else [],
            "outside_scope": sorted(p for p in changed if not in_scope(p, scope)),
        }

    async def note_writes(
        self, agent: str, paths: Sequence[str], tool: str, since: float | None = None
    ) -> list[str]:
        """A task's tool changed `paths`; returns those counted as the task's.

        A shell command's changes come from comparing the whole workspace before and
        after it (it started at `since`), so a change another task may have made meanwhile
        is not counted: one inside another task's write scope, or to a file another task
        wrote since the command started (the team's tasks, and the `others` given, read
        once for a command that changed anything). Writes of a shell command outside the task's
        scope, and a file changed by two live tasks, are reported to the owner (the file
        tools were refused outside the scope before they ran)."""
        task = self._session.state.tasks.get(agent)
        if task is None:
            return list(paths)
        now = trio.current_time()
        problems = []
        if tool == "shell":
            started = since or now
            claimed = await self._claimed_elsewhere(agent, paths, now - started)
            paths = [
                p for p in paths if not self._someone_elses(p, agent, started) and not claimed(p)
            ]
            outside = [p for p in paths if not in_scope(p, task.write_scope)]
            if outside:
                problems.append(
                    "its shell command changed files outside its write scope: " + ", ".join(outside)
                )
        for path in paths:
            writers = self._writers.setdefault(_rel(path), {})
            others = sorted(
                w
                for w in writers
                if w != agent and (t := self._session.state.tasks.get(w)) and t.live
            )
            writers[agent] = now
            if others:
                problems.append(f"{path} was also changed by live task {', '.join(others)}")
        if problems:
            await self._postbox.post(agent, task.owner, agent, "risk_alert", "; ".join(problems))
        return list(paths)

    async def note_escape(self, agent: str, tool: str, written: str, resolved: str) -> None:
        """A task's `tool` call named `written`, inside its write scope, and the path
        leads elsewhere (to `resolved`, or out of the workspace): refused, and reported to
        the owner, since a link made to lead a write out of the scope is a hostile move."""
        task = self._session.state.tasks.get(agent)
        if task is None:
            return
        scope = ", ".join(task.write_scope or ()) or "nothing"
        where = f"resolves to {resolved}" if resolved else "leads outside the workspace"
        summary = (
            f"its {tool} to {written} was refused: the path is inside its write scope "
            f"({scope}) as written but {where} (a symlink or `..`)"
        )
        await self._postbox.post(agent, task.owner, agent, "risk_alert", summary)

    async def _claimed_elsewhere(
        self, agent: str, paths: Sequence[str], took: float
    ) -> Callable[[str], bool]:
        """Which paths a task beyond the team may have changed during `agent`'s shell
        command that ended now, after `took` seconds: its start in wall time, since their
        records are timed by other processes' clocks. One look at them, when a source
        of them was given and there is something to check."""
        if self._others is None or not paths:
            return lambda path: False
        since_ms = now_ms() - round(took * 1000)
        others = await self._others.writes()
        return lambda path: others.claims(path, agent, since_ms)

    def _someone_elses(self, path: str, agent: str, since: float) -> bool:
        """Whether another task may have made a change to `path` seen after a shell
        command that started at `since`: the path is in its write scope, or it wrote
        the file since then."""
        wrote = self._writers.get(_rel(path), {})
        if any(w != agent and at >= since for w, at in wrote.items()):
            return True
        return any(
            other.task_id != agent and other.write_scope and in_scope(path, other.write_scope)
            for other in self._session.state.tasks.tasks.values()
        )

    def files_written(self, agent: str) -> set[str]:
        """Workspace paths `agent`'s tools changed, from its context: each successful
        result's `changed`, as the tool or the shell's watch saw them (tools/watch.py),
        never what a result's text says. A write_file or edit_file result journaled
        before results had `changed` counts its call's `path`; such a shell result counts
        nothing (its text could have been printed by the command)."""
        context = self._session.state.agents.get(agent)
        if context is None:
            return set()
        calls: dict[str, str] = {}
        written: set[str] = set(context.files)  # before its newest checkpoint
        for message in context.messages:
            if isinstance(message, AssistantMessage):
                for call in message.tool_calls:
                    if call.name in ("write_file", "edit_file") and (
                        path := string_argument(call, "path")
                    ):
                        calls[call.id] = path
            elif isinstance(message, ToolResult):
                written_path = calls.pop(message.call_id, "")
                if message.changed:  # whatever the status: a failed command may write
                    written.update(_rel(p) for p in message.changed)
                elif written_path and message.status == "ok":
                    written.add(_rel(written_path))
        return written


def _rel(path: str) -> str:
    return path.strip().removeprefix("./")
