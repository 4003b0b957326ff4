"""Workspace checkpoints as a session runs: after each call that may have changed files,
and as each run starts, the workspace is captured into the session's store
(session/shadow.py) and the checkpoint's tree journaled (`workspace_checkpoint`, in
state/checkpoints.py) just before the call's result, so that the point of the result
holds the files as they were after it.

After `write_file` and `edit_file` only the path the tool wrote is looked at, and the
checkpoint made in-process (session/known.py); after `shell`, the whole workspace, by
`git`'s stat scan (no file is read when nothing changed). Any other tool (a program's
own, an MCP server's) takes none: what it changed is in the next checkpoint, a shell
call's or the one as the main agent's work ends. A checkpoint that changed nothing is not
journaled.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import trio

from orchestrator.errors import SessionError
from orchestrator.messages import ToolCall, ToolResult
from orchestrator.session.shadow import EMPTY_TREE, STORE, Capture, Shadow, available
from orchestrator.state.checkpoints import (
    CheckpointWhy,
    WorkspaceCheckpointed,
    WorkspaceRestored,
)
from orchestrator.state.events import EventSink
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import MAIN
from orchestrator.text import unescaped

FILE_TOOLS = frozenset({"write_file", "edit_file"})  # they say which path they wrote
SCANNED = frozenset({"shell"})  # what they changed is found by a scan of the workspace


class ToolFlags(Protocol):
    """What a checkpoint asks of a tool (tools/base.py's `Tool` has it)."""

    read_only: bool
    journaled: bool


class Checkpointer:
    """Takes the checkpoints of one session's run: one at a time (one index)."""

    def __init__(
        self, directory: Path, workspace: Path, state: SessionState, warn: Callable[[str], None]
    ) -> None:
        self.shadow = Shadow(directory / STORE, workspace)
        self._state = state
        self._warn = warn
        self._lock = trio.Lock()
        self._off = ""
        self._told: set[str] = set()  # what was left out, said once a run

    @classmethod
    def of(
        cls, directory: Path, workspace: Path, state: SessionState, warn: Callable[[str], None]
    ) -> Checkpointer | None:
        """The checkpointer, or None (and one line) where git is missing."""
        if not available():
            warn("workspace checkpoints are off: git is not installed (everything else works)")
            return None
        return cls(directory, workspace, state, warn)

    async def after_call(
        self, agent: str, ref: str, call: ToolCall, tool: ToolFlags | None, result: ToolResult
    ) -> WorkspaceCheckpointed | None:
        """The checkpoint to journal before `result`, or None: the call could not have
        changed a file, or changed none."""
        if tool is None or tool.read_only or tool.journaled or result.status == "cancelled":
            return None
        if call.name in FILE_TOOLS:
            if result.status != "ok" or not result.changed:
                return None
            # (a name that is not UTF-8 is carried escaped: given back as it is)
            paths = [unescaped(path) for path in result.changed]
            return await self._take(agent, "call", ref, paths)
        if call.name in SCANNED:
            return await self._take(agent, "call", ref, None)
        return None  # (a program's own tool: the next shell call's or the run's end sees it)

    async def at_start(self, sink: EventSink, why: CheckpointWhy = "start") -> None:
        """As a run starts (the first run's stores every file), or as the main agent's
        work ends (`why` `end`: what calls in the background changed since): the
        workspace as it is, when it changed."""
        taken = await self._take(MAIN, why, "", None)
        if taken is not None:
            await sink.emit(taken)

    async def finish_restore(self, sink: EventSink) -> None:
        """Finish a restore that a kill cut short (its `workspace_restoring` is journaled,
        its `workspace_restored` not), if there is one."""
        tree = self._state.checkpoints.restoring
        if not tree:
            return
        async with self._lock:
            await trio.to_thread.run_sync(self.shadow.restore, tree)
        await sink.emit(WorkspaceRestored(agent=MAIN, tree=tree), durable=True)

    async def _take(
        self, agent: str, why: CheckpointWhy, ref: str, paths: list[str] | None
    ) -> WorkspaceCheckpointed | None:
        if self._off:
            return None
        try:
            async with self._lock:
                taken: Capture = await trio.to_thread.run_sync(self._capture, paths)
        except SessionError as exc:
            self._off = str(exc)
            if "No space left on device" not in self._off:  # (the journal says that)
                self._warn(f"workspace checkpoints are off for this run: {exc}")
            return None
        for line in taken.left_out:
            if line not in self._told:
                self._told.add(line)
                self._warn(f"left out of the workspace checkpoint: {line}")
        if taken.tree == self._state.checkpoints.tree:
            return None
        return WorkspaceCheckpointed(
            agent=agent, tree=taken.tree, why=why, ref=ref, left_out=taken.left_out
        )

    def _capture(self, paths: list[str] | None) -> Capture:
        """The checkpoint; an empty workspace with no store yet is git's empty tree,
        known without running git (a library run in an empty directory pays nothing)."""
        root = self.shadow.workspace
        if paths is None and not self.shadow.git_dir.exists() and _empty(root):
            return Capture(EMPTY_TREE)
        if paths is not None and not all(os.path.lexists(root / path) for path in paths):
            paths = None  # (a path not found as written: the scan finds what is there)
        return self.shadow.capture(paths)


def _empty(directory: Path) -> bool:
    try:
        with os.scandir(directory) as entries:
            return next(entries, None) is None
    except OSError:
        return False
