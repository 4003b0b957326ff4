"""Snapshots and views: files replaced atomically, and JSON read back.

A snapshot is a derived view (todos, task records, the folded session state) naming the
journal seq it reflects; resume loads it and replays the journal after that seq.
`write_atomic` guarantees a reader (or a crash) sees the old file or the new one, never a
mix: the bytes go to a temporary file in the same directory, which is fsynced,
renamed over the target, and the directory fsynced so the rename itself is durable
(unless the old file would serve as well: a copy derived from the journal).

Everything here blocks; on the trio loop, run it in a thread:
`await trio.to_thread.run_sync(write_json_atomic, path, obj)`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from orchestrator.store._fs import sync_dir, write_all

TEMP_SUFFIX = ".tmp"
"""Temporary files are `.<name>.<random>.tmp` beside the target; a crash can leave one."""


def write_atomic(
    path: os.PathLike[str] | str, data: bytes, *, sync: bool = True, sync_rename: bool = True
) -> None:
    """Replace the file at `path` with `data`, atomically and (with `sync`) durably.
    Without `sync` nothing is fsynced: a reader or a killed process still sees the old file
    or the new one, but after a power loss the file may be either, or empty. With `sync`
    but not `sync_rename`, the new bytes are fsynced and the rename is not: after a power
    loss the file is the old one or the new one, each whole (for a copy derived from the
    journal, which either serves: one fsync of the directory fewer)."""
    import secrets  # here, not above: `sessions show` reads a manifest and writes nothing

    path = Path(path)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        try:
            write_all(fd, data)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if sync and sync_rename:
        sync_dir(path.parent)


def write_json_atomic(path: os.PathLike[str] | str, obj: Any) -> None:
    """`write_atomic` of `obj` as indented JSON (for people to read), newline-terminated.
    Raises orjson's `JSONEncodeError` (a `TypeError`) for what JSON cannot carry."""
    write_atomic(path, orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))


def read_json(path: os.PathLike[str] | str) -> Any:
    """The JSON value in the file at `path`. Raises `OSError` (`FileNotFoundError`, ...)
    or orjson's `JSONDecodeError` (a `ValueError`)."""
    return orjson.loads(Path(path).read_bytes())
