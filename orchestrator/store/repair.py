"""Repairing a corrupt journal: keep the good prefix, set the original aside.

`scan_journal` refuses a journal corrupt before its end (`JournalCorrupt`) rather than
guess. `repair_journal` is the explicit way on, for a person to choose: it keeps every
whole batch before the first fault, and cuts the rest, after copying the original file
to `journal.jsonl.corrupt-<UTC time>` beside it. Nothing is deleted: the cut records are
in that copy, for a person to read or mend.

At every instant `journal.jsonl` is either the original or the repaired journal, and the
copy is durable before the original is truncated. The caller holds the session's lock.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.store._fs import sync_data
from orchestrator.store.scan import walk_journal
from orchestrator.store.snapshot import write_atomic


@dataclass(frozen=True, slots=True)
class RepairReport:
    """What `repair_journal` did. `backup` is None when there was nothing to cut."""

    path: Path
    backup: Path | None
    kept_last_seq: int  # records 1..kept_last_seq are kept
    kept_bytes: int
    cut_bytes: int
    cut_lines: int  # a torn last line counts as one
    reason: str | None  # what made the cut ("line 57 fails its checksum"); None if clean

    def describe(self) -> str:
        if self.backup is None:
            return f"{self.path}: nothing to repair ({self.kept_last_seq} records)"
        return (
            f"{self.path}: kept seq 1-{self.kept_last_seq} ({self.kept_bytes} bytes) and cut "
            f"{self.cut_lines} lines ({self.cut_bytes} bytes) after them, because "
            f"{self.reason}; the original is at {self.backup}"
        )

    def __str__(self) -> str:
        return self.describe()


_KEEP_NO_LINES = 1 << 62


def _utc_now() -> datetime:
    return datetime.now(UTC)


def repair_journal(
    path: os.PathLike[str] | str, *, now: Callable[[], datetime] = _utc_now
) -> RepairReport:
    """Cut the journal at `path` back to its last whole batch before the first fault,
    after copying the original aside. Blocking; a no-op on a journal that scans clean."""
    path = Path(path)
    data = path.read_bytes()
    walk = walk_journal(data, after_seq=_KEEP_NO_LINES)  # check frames only
    if walk.end_offset == len(data):
        return RepairReport(path, None, walk.last_seq, len(data), 0, 0, None)
    reason = (
        f"line {walk.fault.line} {walk.fault.reason}"
        if walk.fault is not None
        else "the journal ends in a partial batch"
    )
    return cut_journal(path, data, walk.end_offset, walk.last_seq, reason, now=now)


def cut_journal(
    path: Path,
    data: bytes,
    keep: int,
    kept_last_seq: int,
    reason: str,
    *,
    now: Callable[[], datetime] = _utc_now,
) -> RepairReport:
    """Copy the journal aside, whole, then truncate it in place to its first `keep`
    bytes (which must end a batch). For the session layer's own repairs too: a record
    whose checksum is good but whose content does not fit (`sessions repair`)."""
    backup = _backup_path(path, now())
    write_atomic(backup, data)
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.ftruncate(fd, keep)
        sync_data(fd)
    finally:
        os.close(fd)
    cut = data[keep:]
    cut_lines = cut.count(b"\n") + (0 if cut.endswith(b"\n") else 1)
    return RepairReport(path, backup, kept_last_seq, keep, len(cut), cut_lines, reason)


def _backup_path(path: Path, when: datetime) -> Path:
    stamp = f"{when.astimezone(UTC):%Y%m%dT%H%M%S}"
    candidate = path.with_name(f"{path.name}.corrupt-{stamp}")
    number = 1
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}.corrupt-{stamp}-{number}")
    return candidate
