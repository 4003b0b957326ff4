"""Snapshots: JSON files replaced atomically, and choosing the newest one that reads.

A snapshot is a derived view (todos, task records, the folded session state) naming the
journal seq it reflects; resume loads the newest valid one and replays the journal after
that seq. `write_atomic` guarantees a reader (or a crash) sees the old file or the new one,
never a mix: the bytes go to a temporary file in the same directory, which is fsynced,
renamed over the target, and the directory fsynced so the rename itself is durable.

Everything here blocks; on the trio loop, run it in a thread:
`await trio.to_thread.run_sync(write_json_atomic, path, obj)`.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from orchestrator.store._fs import sync_dir, write_all

TEMP_SUFFIX = ".tmp"
"""Temporary files are `.<name>.<random>.tmp` beside the target; a crash can leave one."""


def write_atomic(path: os.PathLike[str] | str, data: bytes, *, sync: bool = True) -> None:
    """Replace the file at `path` with `data`, atomically and (with `sync`) durably.
    Without `sync` nothing is fsynced: a reader or a killed process still sees the old file
    or the new one, but after a power loss the file may be either, or empty."""
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
    if sync:
        sync_dir(path.parent)


def write_json_atomic(path: os.PathLike[str] | str, obj: Any) -> None:
    """`write_atomic` of `obj` as indented JSON (for people to read), newline-terminated.
    Raises orjson's `JSONEncodeError` (a `TypeError`) for what JSON cannot carry."""
    write_atomic(path, orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))


def read_json(path: os.PathLike[str] | str) -> Any:
    """The JSON value in the file at `path`. Raises `OSError` (`FileNotFoundError`, ...)
    or orjson's `JSONDecodeError` (a `ValueError`)."""
    return orjson.loads(Path(path).read_bytes())


@dataclass(frozen=True, slots=True)
class RejectedSnapshot:
    path: Path
    reason: str


@dataclass(frozen=True, slots=True)
class SnapshotChoice:
    """The newest valid snapshot (`path`, `data`, `seq`; all None when there is none),
    and every candidate rejected as invalid, with why."""

    path: Path | None
    data: Any
    seq: int | None
    rejected: list[RejectedSnapshot] = field(default_factory=list)


def newest_snapshot(
    paths: Iterable[os.PathLike[str] | str],
    *,
    seq_of: Callable[[Any], int],
    max_seq: int | None = None,
) -> SnapshotChoice:
    """Of the snapshot files `paths`, the valid one reflecting the highest journal seq.

    `seq_of(data)` reads the seq a parsed snapshot names (e.g. `lambda d: d["seq"]`); a
    `KeyError`, `TypeError` or `ValueError` from it rejects the file. Files that are
    missing, unreadable or not JSON are rejected too, as are, given `max_seq` (the
    journal's last committed seq), snapshots naming a later seq: they reflect records the
    journal no longer holds. On a tie the first in `paths` wins.
    """
    best: tuple[Path, Any, int] | None = None
    rejected: list[RejectedSnapshot] = []
    for candidate in map(Path, paths):
        try:
            data = read_json(candidate)
        except (OSError, orjson.JSONDecodeError) as exc:
            rejected.append(RejectedSnapshot(candidate, f"unreadable: {exc}"))
            continue
        try:
            seq = seq_of(data)
        except (KeyError, TypeError, ValueError) as exc:
            rejected.append(RejectedSnapshot(candidate, f"names no seq: {exc!r}"))
            continue
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            rejected.append(RejectedSnapshot(candidate, f"names no seq: {seq!r}"))
        elif max_seq is not None and seq > max_seq:
            reason = f"names seq {seq}, past the journal's last committed seq {max_seq}"
            rejected.append(RejectedSnapshot(candidate, reason))
        elif best is None or seq > best[2]:
            best = (candidate, data, seq)
    if best is None:
        return SnapshotChoice(None, None, None, rejected)
    return SnapshotChoice(best[0], best[1], best[2], rejected)
