"""Workspace file tools: read, write, edit (list and grep: tools/search.py). Blocking
file I/O runs in a worker thread so a large file never stalls other agents on the trio
loop.

`read_file` runs without asking, so it is bounded: only regular files are read (a FIFO
or a device could block or never end), and reads stop at a byte cap."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat

import trio
from pydantic import BaseModel, Field

from orchestrator.errors import ToolFailed
from orchestrator.tools.base import Tool, ToolContext, ToolOutput
from orchestrator.tools.workspace import Target, Workspace, not_followed

READ_CAP_BYTES = 256 * 1024
READ_SCAN_BYTES = 64 * 1024 * 1024  # how far into a file read_file looks for a line range
TEMP_SUFFIX = ".orchestrator-tmp"
"""How a write's temporary file, beside its target until it is renamed over it, ends."""
UNDECODED = "surrogateescape"  # how edit_file carries a file's bytes that are not UTF-8
ESCAPED_NOTE = (
    "[a name with bytes that are not UTF-8 is shown with each such byte as \\xNN; "
    "the file tools take it back written so]"
)


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
    interruptible = True
    idempotent = True

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolOutput:
        if args.end_line is not None and args.end_line < args.start_line:
            raise ToolFailed(f"end_line {args.end_line} is before start_line {args.start_line}")
        target = ctx.workspace.target(args.path)
        # Bounded, so a cancelled call may leave the thread to finish on its own.
        text = await trio.to_thread.run_sync(
            _read_lines, ctx.workspace, target, args, READ_CAP_BYTES, abandon_on_cancel=True
        )
        return ToolOutput(text)


def _open_regular(directory: int, target: Target) -> int:
    """A descriptor of the regular file `target.name` in `directory`, opened without
    following a symlink and without blocking (a FIFO's open would wait for a writer);
    anything else is refused with what it is."""
    shown = target.shown
    if not target.parts:
        raise ToolFailed(f"{shown} is a directory; use list_files")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(target.name, flags, dir_fd=directory)
    except FileNotFoundError:
        raise ToolFailed(f"{shown}: no such file") from None
    except OSError as exc:
        with contextlib.suppress(OSError):  # a socket, say: say what it is
            mode = os.stat(target.name, dir_fd=directory, follow_symlinks=False).st_mode
            if not stat.S_ISLNK(mode):
                _check_regular(mode, shown)
        raise not_followed(directory, target.name, shown, exc) from None
    try:
        _check_regular(os.fstat(fd).st_mode, shown)
    except ToolFailed:
        os.close(fd)
        raise
    os.set_blocking(fd, True)
    return fd


def _check_regular(mode: int, shown: str) -> None:
    if stat.S_ISDIR(mode):
        raise ToolFailed(f"{shown} is a directory; use list_files")
    if not stat.S_ISREG(mode):
        raise ToolFailed(f"{shown} is not a regular file (a pipe, socket or device)")


def _read_lines(workspace: Workspace, target: Target, args: ReadFileArgs, cap: int) -> str:
    """Lines start_line..end_line, at most `cap` bytes of them, looking at most
    READ_SCAN_BYTES into the file (a file without newlines is read in bounded pieces,
    never whole); what was left out is said at the end."""
    with workspace.directory(target.parent) as directory:
        fd = _open_regular(directory, target)
    with os.fdopen(fd, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        kept: list[bytes] = []
        kept_bytes = 0
        scanned = 0
        number = 1  # the line the next piece belongs to
        note = ""
        while True:
            piece = file.readline(1 << 20)
            if not piece:
                break
            scanned += len(piece)
            if number >= args.start_line:
                if kept_bytes + len(piece) > cap:
                    kept.append(piece[: cap - kept_bytes])
                    note = (
                        f"[truncated at {cap} bytes, in line {number}, of a {size}-byte file; "
                        "read a line range to see the rest]"
                    )
                    break
                kept.append(piece)
                kept_bytes += len(piece)
            if piece.endswith(b"\n"):
                if args.end_line is not None and number >= args.end_line:
                    break
                number += 1
            if scanned >= READ_SCAN_BYTES:
                note = (
                    f"[stopped in line {number}: read_file looks at most "
                    f"{READ_SCAN_BYTES // (1024 * 1024)} MiB into a file ({size} bytes); "
                    "use grep or shell for the rest]"
                )
                break
    text = b"".join(kept).decode("utf-8", errors="replace")
    return f"{text}\n{note}" if note else text


def _read_bytes(directory: int, target: Target) -> bytes:
    with os.fdopen(_open_regular(directory, target), "rb") as file:
        return file.read()


class WriteFileArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root.")
    content: str = Field(description="The whole new content of the file.")


class WriteFile(Tool[WriteFileArgs]):
    name = "write_file"
    description = "Create or overwrite a file in the workspace (parent directories are created)."
    args_model = WriteFileArgs
    idempotent = True

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolOutput:
        target = ctx.workspace.writable(args.path, ctx.write_scope)
        data = args.content.encode("utf-8")
        await trio.to_thread.run_sync(write_target, ctx.workspace, target, data, ctx.call)
        return ToolOutput(f"wrote {len(data)} bytes to {args.path}", changed=(target.rel,))

    async def recover(self, args: WriteFileArgs, ctx: ToolContext) -> None:
        _remove_temp(ctx.workspace, ctx.workspace.target(args.path), ctx.call)


def write_target(workspace: Workspace, target: Target, data: bytes, call: str = "") -> None:
    """Write `data` to the checked `target`, making its missing directories, through
    descriptors only (see workspace.py): a symlink put in the path since the check makes
    this fail, and it never writes anywhere else."""
    if not target.parts:
        raise ToolFailed(f"{target.shown} is a directory")
    with workspace.directory(target.parent, create=True) as directory:
        _replace(directory, target, data, call)


def _temp(name: str, call: str) -> str:
    """The file a write goes to before it is renamed over `name`, in the same directory:
    named after the call, so a re-run of the call reuses it and a crash's leftover can be
    found (`recover`)."""
    tag = call or secrets.token_hex(4)
    return f".{name}.{tag}{TEMP_SUFFIX}"


def _remove_temp(workspace: Workspace, target: Target, call: str) -> None:
    if not target.parts:
        return
    with (
        contextlib.suppress(ToolFailed, FileNotFoundError),
        workspace.directory(target.parent) as directory,
    ):
        os.unlink(_temp(target.name, call), dir_fd=directory)


def _replace(directory: int, target: Target, data: bytes, call: str = "") -> None:
    """Write `data` to a new file in `directory`, then rename it over `target.name`: a
    process killed part-way leaves the old file or the new one, never half of each. The
    file keeps its permissions (a new one gets the umask's). A rename replaces the name
    itself, so a symlink there would be replaced, not followed; one is refused anyway,
    since the checked path had none."""
    name = target.name
    try:
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        mode = None
    else:
        if stat.S_ISDIR(info.st_mode):
            raise ToolFailed(f"{target.shown} is a directory")
        if stat.S_ISLNK(info.st_mode):
            raise not_followed(directory, name, target.shown, OSError(errno.ELOOP, ""))
        mode = stat.S_IMODE(info.st_mode)
    temp = _temp(name, call)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(temp, flags, 0o666, dir_fd=directory)
    except OSError as exc:
        raise not_followed(directory, temp, target.shown, exc) from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            if mode is not None:
                os.fchmod(out.fileno(), mode)
        os.replace(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=directory)
        raise


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
        target = ctx.workspace.writable(args.path, ctx.write_scope)
        return await trio.to_thread.run_sync(_edit, ctx.workspace, target, args, ctx.call)

    async def recover(self, args: EditFileArgs, ctx: ToolContext) -> ToolOutput | None:
        # The file is replaced whole (a temporary file renamed over it), so it holds
        # either the edit or not: without new_text it cannot hold the edit, and runs it
        # now; without old_text but with new_text it took the edit before the crash.
        target = ctx.workspace.writable(args.path, ctx.write_scope)
        _remove_temp(ctx.workspace, target, ctx.call)
        try:
            with ctx.workspace.directory(target.parent) as directory:
                text = _read_bytes(directory, target).decode("utf-8", UNDECODED)
        except (ToolFailed, UnicodeDecodeError):
            return None
        if args.new_text and args.new_text not in text:
            return await self.run(args, ctx)
        if args.old_text not in text and (args.new_text in text):
            return ToolOutput(
                f"edited {args.path} (before the session stopped)", changed=(target.rel,)
            )
        return None


def _edit(workspace: Workspace, target: Target, args: EditFileArgs, call: str = "") -> ToolOutput:
    """The edit, read and written through one descriptor of the file's directory."""
    if not args.old_text:
        raise ToolFailed("old_text is empty; use write_file to create a file")
    with workspace.directory(target.parent) as directory:
        # Bytes that are not UTF-8 (a Latin-1 file) are kept as they are, around the edit.
        original = _read_bytes(directory, target).decode("utf-8", UNDECODED)
        count = original.count(args.old_text)
        if count == 0:
            raise ToolFailed(f"old_text not found in {args.path}")
        if count > 1:
            raise ToolFailed(
                f"old_text occurs {count} times in {args.path}; include more context to pick one"
            )
        edited = original.replace(args.old_text, args.new_text, 1).encode("utf-8", UNDECODED)
        _replace(directory, target, edited, call)
    return ToolOutput(f"edited {args.path}", changed=(target.rel,))
