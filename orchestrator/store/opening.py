"""Opening a journal for appending, and closing it: `open_journal`.

```python
async with open_journal(path, durability=Durability.BATCH) as journal:
    seq = await journal.append("tool_started", "main", {"call_id": "c1"}, durable=True)
```

Opening scans the file (or reuses the `JournalScan` the caller just made, when the file
has not changed since), truncates a cut tail (see `scan.py`: the caller warns, from
`journal.cut`), syncs what is there, and starts a writer task in the context manager's
own nursery. The caller must hold the session's lock: one writer per journal.

On exit the context manager flushes everything, shielded from cancellation but bounded by
`close_timeout`, then closes the file. It raises `SessionError` if records may be lost (a
failed write, or the flush timed out), unless the body is already raising.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from types import TracebackType
from typing import final

import trio

from orchestrator.store._fs import sync_dir
from orchestrator.store.journal import Durability, Journal
from orchestrator.store.scan import JournalScan, scan_journal


@final
class _OpenJournal(AbstractAsyncContextManager[Journal]):
    def __init__(
        self,
        path: Path,
        scan: JournalScan | None,
        durability: Durability,
        close_timeout: float,
        make: Callable[[int, JournalScan], Journal],
    ) -> None:
        self._path = path
        self._scan = scan
        self._durability = durability
        self._close_timeout = close_timeout
        self._make = make

    async def __aenter__(self) -> Journal:
        fd, scan = await trio.to_thread.run_sync(_prepare, self._path, self._scan, self._durability)
        self._journal = journal = self._make(fd, scan)
        # The writer lives in a nursery entered here and exited in __aexit__, by hand rather
        # than with `async with`, so that exceptions from the caller's block reach the caller
        # as they are, not wrapped in an ExceptionGroup by the nursery.
        self._nursery_manager = trio.open_nursery()
        self._nursery = await self._nursery_manager.__aenter__()
        self._nursery.start_soon(journal.run_writer)
        return journal

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        journal = self._journal
        try:
            await journal.drain(self._close_timeout)
            await self._nursery_manager.__aexit__(None, None, None)
        finally:
            journal.finish()
        lost = journal.lost_records_error()
        if lost is not None and exc is None:
            raise lost


def open_journal(
    path: os.PathLike[str] | str,
    *,
    durability: Durability = Durability.BATCH,
    clock: Callable[[], float] = time.time,
    scan: JournalScan | None = None,
    max_delay: float = 0.002,
    max_batch_bytes: int = 1 << 20,
    close_timeout: float = 10.0,
) -> AbstractAsyncContextManager[Journal]:
    """Open the journal at `path` for appending (creating it), as `async with`.

    `scan`: a `scan_journal` result for this path, to skip scanning again (ignored if
    the file's size changed since). `clock` gives each record's time (Unix seconds,
    stored as whole milliseconds; a batch's records share one). `max_delay` bounds how
    long a non-durable append waits in the queue for company; `max_batch_bytes` of queued
    records cut that wait short.
    Raises `JournalCorrupt` for corruption before the journal's end.
    """
    path = Path(path)
    make = functools.partial(
        Journal,
        path,
        durability=durability,
        clock=clock,
        max_delay=max_delay,
        max_batch_bytes=max_batch_bytes,
    )
    return _OpenJournal(path, scan, durability, close_timeout, make)


def _prepare(
    path: Path, scan: JournalScan | None, durability: Durability
) -> tuple[int, JournalScan]:
    """Open the file for appending, with its cut tail truncated away and its contents synced."""
    existed = path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        size = os.fstat(fd).st_size
        if scan is None or scan.path != path or scan.file_size != size:
            scan = scan_journal(path, after_seq=sys.maxsize)  # checks, parses no body
        if scan.cut is not None:
            os.ftruncate(fd, scan.end_offset)
        if durability is not Durability.OFF and (size or not existed):
            # What a crashed predecessor wrote (maybe with policy off) is on disk before
            # anything is built on it; and a truncation is durable before we append. (An
            # empty journal that was there holds nothing to sync: a new session's, made
            # with its manifest, whose directory was synced then.)
            os.fsync(fd)
            if not existed:
                sync_dir(path.parent)
    except BaseException:
        os.close(fd)
        raise
    return fd, scan
