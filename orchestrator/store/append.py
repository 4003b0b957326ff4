"""Appending a batch to a journal that no live writer holds: the first records of a
session being made, or a record a migration adds. A live session appends through its
`Journal` (journal.py) instead."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator.store._fs import sync_data, sync_dir, write_all
from orchestrator.store._line import encode
from orchestrator.store.scan import scan_journal


def append_batch(
    path: Path,
    records: Sequence[tuple[str, str, dict[str, Any]]],
    *,
    each: bool = False,
    after: tuple[int, int] | None = None,
) -> int:
    """Append `records` (kind, agent, body) as one batch after the journal's last
    committed record (with `each`, as a batch of one each), and make it durable; returns
    the batch's last seq. A torn tail is cut first, as a resume would cut it. `after`:
    (last seq, length in bytes) of a journal the caller has just written whole, which is
    then not scanned again. The caller holds the session's lock (or made the session).
    Blocking."""
    last_seq, end_offset = after if after is not None else _end(path)
    stamp = int(time.time() * 1000)
    data = b"".join(
        encode(last_seq + n, stamp, kind, agent, body, end=each or n == len(records))
        for n, (kind, agent, body) in enumerate(records, 1)
    )
    created = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.ftruncate(fd, end_offset)
        os.lseek(fd, end_offset, os.SEEK_SET)
        write_all(fd, data)
        sync_data(fd)
    finally:
        os.close(fd)
    if created:
        sync_dir(path.parent)
    return last_seq + len(records)


def _end(path: Path) -> tuple[int, int]:
    scan = scan_journal(path)
    return scan.last_seq, scan.end_offset
