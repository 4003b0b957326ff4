"""Which files a subagent's tools changed: the file tools say so, and a shell command's
changes are found by comparing the workspace's file metadata before and after it (the
shell is confined by its sandbox to directories, and what it did can be seen).

`Watched` wraps a tool for one agent: after each successful call it reports the paths it
changed to a callback (the team checks them against the task's write scope and the other
live tasks), and keeps those counted as the agent's in the result's `changed` (journaled
with it: what the completion check reads). A shell result also gets a last line naming
them, for the model; nothing reads that line back, so a command that prints one forges
nothing.

Paths are shown as the results show them: a name that is not UTF-8 escaped
(`text.escaped`), so the check, its messages and the journal carry it as any other.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from orchestrator.text import escaped
from orchestrator.tools.base import AnyTool, Tool, ToolContext, ToolOutput
from orchestrator.tools.files import TEMP_SUFFIX
from orchestrator.tools.walk import SKIP_DIRS

MAX_ENTRIES = 20_000  # a larger workspace is not compared (the note says so)
# Not walked (they would take most workspaces past MAX_ENTRIES), but compared as one
# entry each, by their own metadata and their direct entries': what runs outside the
# sandbox later (git's hooks and config, a venv's scripts) is seen changed.
BY_MTIME = frozenset({".git", ".venv", "node_modules"})
TRAILER = "[files changed by this command: "

Files = dict[str, tuple[int, int]]  # workspace-relative path (escaped) -> (mtime_ns, size)
# (agent, paths, tool, when the call started) -> the paths counted as that agent's
OnWrite = Callable[[str, Sequence[str], str, float], Awaitable[list[str]]]


def file_states(root: Path, limit: int = MAX_ENTRIES) -> Files | None:
    """Every regular file under `root` (tool caches and the file tools' temporary files
    skipped, symlinks not followed) with its modification time and size, and each of
    `BY_MTIME` as one entry (`directory_state`); None past `limit` entries."""
    found: Files = {}
    stack = [root]
    entries = 0
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as scan:
                for entry in scan:
                    entries += 1
                    if entries > limit:
                        return None
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name in BY_MTIME:
                            rel = Path(entry.path).relative_to(root).as_posix()
                            found[rel] = directory_state(Path(entry.path))
                        elif entry.name not in SKIP_DIRS:
                            stack.append(Path(entry.path))
                        continue
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    # (a file tool's temporary file is its write in flight, another
                    # task's perhaps: never a change of the command's)
                    if stat.S_ISREG(info.st_mode) and not entry.name.endswith(TEMP_SUFFIX):
                        rel = escaped(Path(entry.path).relative_to(root).as_posix())
                        found[rel] = (info.st_mtime_ns, info.st_size)
        except OSError:
            continue
    return found


def directory_state(directory: Path) -> tuple[int, int]:
    """A directory's modification time and a digest of its direct entries' names, times
    and sizes: an entry added, removed or renamed, a file written in it, or a file added
    in a directory of it changes it."""
    try:
        own = directory.stat().st_mtime_ns
        with os.scandir(directory) as scan:
            entries = []
            for entry in scan:
                info = entry.stat(follow_symlinks=False)
                entries.append((entry.name, info.st_mtime_ns, info.st_size))
    except OSError:
        return (0, 0)
    return (own, hash(tuple(sorted(entries))))


def changes(before: Files, after: Files) -> list[str]:
    """Paths created, changed or deleted between two `file_states`."""
    return sorted(
        path for path in before.keys() | after.keys() if before.get(path) != after.get(path)
    )


class Watched(Tool[Any]):
    """`tool`, reporting the files each successful call changed to `on_write`."""

    def __init__(self, tool: AnyTool, on_write: OnWrite) -> None:
        self.tool = tool
        self.on_write = on_write
        self.name = tool.name
        self.description = tool.description
        self.args_model = tool.args_model
        self.read_only = tool.read_only
        self.idempotent = tool.idempotent
        self.approval = tool.approval
        self.interruptible = tool.interruptible
        self.background = tool.background
        self.reports_progress = tool.reports_progress

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutput:
        if self.tool.name != "shell":
            output = await self.tool.run(args, ctx)
            if output.status == "ok" and output.changed:
                # Where the path resolved, as the tool wrote it.
                now = trio.current_time()
                await self.on_write(ctx.agent, output.changed, self.tool.name, now)
            return output
        root = ctx.workspace.root
        started = trio.current_time()
        before = await trio.to_thread.run_sync(file_states, root)
        output = await self.tool.run(args, ctx)
        after = await trio.to_thread.run_sync(file_states, root) if before is not None else None
        if before is None or after is None:
            note = f"\n[files changed: not checked, the workspace has over {MAX_ENTRIES} entries]"
            return dataclasses.replace(output, content=output.content + note)
        changed = await self.on_write(ctx.agent, changes(before, after), self.tool.name, started)
        if not changed:
            return output
        trailer = f"\n{TRAILER}{', '.join(changed)}]"
        return dataclasses.replace(output, content=output.content + trailer, changed=tuple(changed))

    def asks_anyway(self, args: Any) -> str | None:
        return self.tool.asks_anyway(args)

    async def recover(self, args: Any, ctx: ToolContext) -> ToolOutput | None:
        # A call that the crash cut off is settled unwatched: its write scope was checked
        # before it started, and which task changed the file is runtime, lost with it.
        return await self.tool.recover(args, ctx)
