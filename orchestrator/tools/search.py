"""Finding what is in the workspace: `list_files` (a glob) and `grep` (a regular
expression). Both are read-only and bounded: a listing stops after a number of entries
and a time limit, and grep runs in a child process killed at its time limit or when the
call is cancelled (a pathological regular expression cannot hang the session, nor hang
it again after a resume)."""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path
from typing import Any

import orjson
import trio
from pydantic import BaseModel, Field

from orchestrator.errors import ToolFailed
from orchestrator.text import escaped
from orchestrator.tools import walk as walk_module
from orchestrator.tools.base import Tool, ToolContext, ToolOutput
from orchestrator.tools.files import ESCAPED_NOTE
from orchestrator.tools.walk import GREP_FILE_BYTES, walk_files

LIST_CAP = 1000
WALK_ENTRIES = 200_000  # directory entries a listing or a search looks at, at most
WALK_SECONDS = 20.0
GREP_CAP = 200
GREP_SECONDS = 30.0


class ListFilesArgs(BaseModel):
    pattern: str = Field("**/*", description="Glob pattern relative to the workspace root.")


class ListFiles(Tool[ListFilesArgs]):
    name = "list_files"
    description = (
        "List files in the workspace matching a glob pattern (default: all files). "
        f"At most {LIST_CAP} paths are returned."
    )
    args_model = ListFilesArgs
    read_only = True
    interruptible = True
    idempotent = True

    async def run(self, args: ListFilesArgs, ctx: ToolContext) -> ToolOutput:
        if Path(args.pattern).is_absolute() or ".." in Path(args.pattern).parts:
            ctx.workspace.resolve(args.pattern)  # raises WorkspaceEscape if it leaves
        root = ctx.workspace.root
        walk = await trio.to_thread.run_sync(
            functools.partial(
                walk_files, root, root, args.pattern, max_entries=WALK_ENTRIES, seconds=WALK_SECONDS
            ),
            abandon_on_cancel=True,  # bounded: a cancelled call lets the thread finish alone
        )
        paths = [escaped(name) for _, name in walk.files]
        stopped = f"\n[the listing {walk.stopped}; narrow the pattern]" if walk.stopped else ""
        if not paths:
            return ToolOutput(f"no files match {args.pattern!r}{stopped}")
        shown = paths[:LIST_CAP]
        more = f"\n[{len(paths) - LIST_CAP} more not shown]" if len(paths) > LIST_CAP else ""
        note = _escapes_note(shown, [name for _, name in walk.files[:LIST_CAP]])
        return ToolOutput("\n".join(shown) + more + stopped + note)


def _escapes_note(shown: list[str], names: list[str]) -> str:
    """The line saying how names are escaped, when one of `names` was."""
    return f"\n{ESCAPED_NOTE}" if shown != names else ""


class GrepArgs(BaseModel):
    pattern: str = Field(description="Python regular expression to search for.")
    path: str = Field(".", description="File or directory to search, relative to the root.")
    glob: str = Field("**/*", description="Which files under `path` to search.")


class Grep(Tool[GrepArgs]):
    name = "grep"
    description = (
        "Search text files for a regular expression; prints path:line:text for each match "
        f"(at most {GREP_CAP})."
    )
    args_model = GrepArgs
    read_only = True
    interruptible = True
    idempotent = True

    def __init__(self, seconds: float = GREP_SECONDS) -> None:
        self.seconds = seconds

    async def run(self, args: GrepArgs, ctx: ToolContext) -> ToolOutput:
        try:
            re.compile(args.pattern)
        except re.error as exc:
            raise ToolFailed(f"bad regular expression {args.pattern!r}: {exc}") from exc
        base = ctx.workspace.resolve(args.path)
        request = {
            "glob": args.glob,
            "pattern": args.pattern,
            "cap": GREP_CAP,
            "max_entries": WALK_ENTRIES,
            "seconds": WALK_SECONDS,
        }
        # A child process, killed at the time limit or when the call is cancelled: no
        # regular expression can hang the session (or hang it again after a resume).
        # The root and the base are arguments of their own: a path need not be UTF-8.
        command = [
            sys.executable,
            "-I",
            str(Path(walk_module.__file__)),
            orjson.dumps(request).decode(),
            str(ctx.workspace.root),
            str(base),
        ]
        with trio.move_on_after(self.seconds):
            done = await trio.run_process(
                command, capture_stdout=True, capture_stderr=True, check=False
            )
            if done.returncode != 0:
                raise ToolFailed(f"grep failed: {done.stderr.decode(errors='replace')[-500:]}")
            found = orjson.loads(done.stdout)
            return _grep_output(args.pattern, found)
        raise ToolFailed(
            f"grep gave up after {self.seconds:g}s (a very slow regular expression, or a "
            "very large tree); narrow the pattern, the path or the glob"
        )


def _grep_output(pattern: str, found: dict[str, Any]) -> ToolOutput:
    matches: list[str] = []
    names_escaped = False
    for hex_name, number, line in found["matches"]:
        raw = os.fsdecode(bytes.fromhex(hex_name))
        name = escaped(raw)
        names_escaped = names_escaped or name != raw
        matches.append(f"{name}:{number}:{line}" if number else f"{name}: binary file matches")
    notes = []
    if len(matches) > GREP_CAP:
        notes.append(f"[stopped after {GREP_CAP} matches]")
    if found["replaced"]:
        files = "1 file is" if found["replaced"] == 1 else f"{found['replaced']} files are"
        notes.append(
            f"[{files} not UTF-8: searched with each byte that is not UTF-8 read as U+FFFD "
            "(\ufffd), as read_file shows it]"
        )
    if names_escaped:
        notes.append(ESCAPED_NOTE)
    if found["stopped"]:
        notes.append(f"[the search {found['stopped']}; narrow the path or the glob]")
    if found["skipped"]:
        notes.append(
            f"[{found['skipped']} files over {GREP_FILE_BYTES // (1024 * 1024)} MiB not searched]"
        )
    tail = "\n" + "\n".join(notes) if notes else ""
    if not matches:
        return ToolOutput(f"no matches for {pattern!r}{tail}")
    return ToolOutput("\n".join(matches[:GREP_CAP]) + tail)
