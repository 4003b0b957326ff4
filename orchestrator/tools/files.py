"""Workspace file tools: read, write, edit, list, grep. Blocking file I/O runs in a worker
thread so a large file never stalls other agents on the trio loop."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import trio
from pydantic import BaseModel, Field

from orchestrator.errors import ToolFailed
from orchestrator.tools.base import Tool, ToolContext, ToolOutput

READ_CAP_BYTES = 256 * 1024
LIST_CAP = 1000
GREP_CAP = 200
SKIP_DIRS = frozenset({".git", ".venv", "__pycache__", "node_modules", ".mypy_cache"})


class ReadFileArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root.")
    start_line: int = Field(1, ge=1, description="First line to return (1-based).")
    end_line: int | None = Field(None, ge=1, description="Last line to return (inclusive).")


class ReadFile(Tool[ReadFileArgs]):
    name = "read_file"
    description = (
        "Read a text file from the workspace, optionally a range of lines. "
        f"Output is capped at {READ_CAP_BYTES // 1024} KiB."
    )
    args_model = ReadFileArgs
    read_only = True
    idempotent = True

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolOutput:
        path = ctx.workspace.resolve(args.path)
        data = await trio.to_thread.run_sync(_read_bytes, path, args.path)
        lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
        end = args.end_line if args.end_line is not None else len(lines)
        if end < args.start_line:
            raise ToolFailed(f"end_line {end} is before start_line {args.start_line}")
        text = "".join(lines[args.start_line - 1 : end])
        encoded = text.encode()
        if len(encoded) > READ_CAP_BYTES:
            text = encoded[:READ_CAP_BYTES].decode("utf-8", errors="ignore")
            text += (
                f"\n[truncated at {READ_CAP_BYTES} bytes of {len(encoded)}; "
                "read a line range to see the rest]"
            )
        return ToolOutput(text)


def _read_bytes(path: Path, shown: str) -> bytes:
    if not path.exists():
        raise ToolFailed(f"{shown}: no such file")
    if path.is_dir():
        raise ToolFailed(f"{shown} is a directory; use list_files")
    return path.read_bytes()


class WriteFileArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root.")
    content: str = Field(description="The whole new content of the file.")


class WriteFile(Tool[WriteFileArgs]):
    name = "write_file"
    description = "Create or overwrite a file in the workspace (parent directories are created)."
    args_model = WriteFileArgs
    idempotent = True

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolOutput:
        path = ctx.workspace.resolve(args.path)
        await trio.to_thread.run_sync(_write_text, path, args.content)
        return ToolOutput(f"wrote {len(args.content.encode())} bytes to {args.path}")


def _write_text(path: Path, content: str) -> None:
    if path.is_dir():
        raise ToolFailed(f"{path.name} is a directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")


class EditFileArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root.")
    old_text: str = Field(description="Exact text to replace; must occur exactly once.")
    new_text: str = Field(description="Replacement text.")


class EditFile(Tool[EditFileArgs]):
    name = "edit_file"
    description = (
        "Replace one exact occurrence of old_text with new_text in a file. Fails if old_text "
        "is missing or occurs more than once (add surrounding lines to make it unique)."
    )
    args_model = EditFileArgs

    async def run(self, args: EditFileArgs, ctx: ToolContext) -> ToolOutput:
        path = ctx.workspace.resolve(args.path)
        return await trio.to_thread.run_sync(_edit, path, args)


def _edit(path: Path, args: EditFileArgs) -> ToolOutput:
    if not args.old_text:
        raise ToolFailed("old_text is empty; use write_file to create a file")
    original = _read_bytes(path, args.path).decode("utf-8")
    count = original.count(args.old_text)
    if count == 0:
        raise ToolFailed(f"old_text not found in {args.path}")
    if count > 1:
        raise ToolFailed(
            f"old_text occurs {count} times in {args.path}; include more context to pick one"
        )
    path.write_text(original.replace(args.old_text, args.new_text, 1), encoding="utf-8")
    return ToolOutput(f"edited {args.path}")


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
    idempotent = True

    async def run(self, args: ListFilesArgs, ctx: ToolContext) -> ToolOutput:
        if Path(args.pattern).is_absolute() or ".." in Path(args.pattern).parts:
            ctx.workspace.resolve(args.pattern)  # raises WorkspaceEscape if it leaves
        paths = await trio.to_thread.run_sync(_glob, ctx, args.pattern)
        if not paths:
            return ToolOutput(f"no files match {args.pattern!r}")
        shown = paths[:LIST_CAP]
        more = f"\n[{len(paths) - LIST_CAP} more not shown]" if len(paths) > LIST_CAP else ""
        return ToolOutput("\n".join(shown) + more)


def _files(ctx: ToolContext, base: Path, pattern: str) -> Iterator[tuple[Path, str]]:
    """Files under `base` matching `pattern`, sorted, with their workspace-relative names:
    tool caches skipped, and symlinks that lead out of the workspace left out."""
    root = ctx.workspace.root
    for path in [base] if base.is_file() else sorted(base.glob(pattern)):
        rel = path.relative_to(root)
        if any(part in SKIP_DIRS for part in rel.parts) or not path.is_file():
            continue
        if path.resolve().is_relative_to(root):
            yield path, rel.as_posix()


def _glob(ctx: ToolContext, pattern: str) -> list[str]:
    return [name for _, name in _files(ctx, ctx.workspace.root, pattern)]


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
    idempotent = True

    async def run(self, args: GrepArgs, ctx: ToolContext) -> ToolOutput:
        try:
            regex = re.compile(args.pattern)
        except re.error as exc:
            raise ToolFailed(f"bad regular expression {args.pattern!r}: {exc}") from exc
        base = ctx.workspace.resolve(args.path)
        matches = await trio.to_thread.run_sync(_grep, ctx, base, args.glob, regex)
        if not matches:
            return ToolOutput(f"no matches for {args.pattern!r}")
        more = f"\n[stopped after {GREP_CAP} matches]" if len(matches) > GREP_CAP else ""
        return ToolOutput("\n".join(matches[:GREP_CAP]) + more)


def _grep(ctx: ToolContext, base: Path, glob: str, regex: re.Pattern[str]) -> list[str]:
    matches: list[str] = []
    for path, name in _files(ctx, base, glob):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary or unreadable: not a text match
        for number, line in enumerate(text.splitlines(), start=1):
            if regex.search(line):
                matches.append(f"{name}:{number}:{line}")
                if len(matches) > GREP_CAP:
                    return matches
    return matches
