"""Following a session's journal while another process writes it, and replaying one at a
chosen speed: what `orchestrator sessions watch` shows, and a library user may too.

```python
pace = Pace(speed=10)  # ten times faster than it happened; 0: no waiting
async with contextlib.aclosing(follow_journal(directory)) as entries:
    async for entry in entries:
        await pace.until(entry.time)
        model.apply(entry.record, at=pace.now())
```

Read-only, by construction: the journal is opened for reading, a poll at a time; the
session's lock is never taken, not even probed (a probe's shared `flock` would, for that
moment, refuse the process that runs the session); nothing is written in the session's
directory. Whether a session left `running` still has a process is read from the lock
file's contents (the pid its holder wrote) and that process's existence.

The follower yields what `scan_journal` would keep, as it becomes so: whole lines, each
checked (frame, checksum, seq), of whole batches (a batch whose end is not yet on disk
is waited for, as is a torn last line: the writer is still writing it). Any other fault
is `JournalCorrupt`, with the message the other commands give. It ends when the session
has ended (the journal's last status record says so) and nothing follows it, or when no
process writes it any more (a session left `running`, or with a torn line after its
end: it was killed, and it is resumable).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import NamedTuple

import trio

from orchestrator.errors import JournalCorrupt
from orchestrator.layout import JOURNAL, LOCK
from orchestrator.session.replay import decode_records
from orchestrator.state.events import Record, SessionStatusChanged
from orchestrator.state.retell import RecordEvents as RecordEvents  # (the view's face)
from orchestrator.store.lock import LockHolder
from orchestrator.store.scan import JournalMark, corrupt_error, walk_journal
from orchestrator.view.history import written_at

POLL = 0.1  # seconds between two looks at a journal that has not grown
GAP = 2.0  # the longest wait of a replay between two records, in seconds


class JournalEntry(NamedTuple):
    """A journal record, its seq and the wall time (Unix seconds) it was written."""

    seq: int
    time: float
    record: Record


async def follow_journal(
    directory: Path, *, poll: float = POLL
) -> AsyncGenerator[JournalEntry, None]:
    """Every record of the session in `directory`, from its first, as it is written,
    until the session ends (see the module's docstring); looks again every `poll`
    seconds while nothing new is there. Leave early with `contextlib.aclosing`."""
    path, lock = directory / JOURNAL, directory / LOCK
    offset, seq = 0, 0  # where the next unread batch starts, and the seq before it
    status: str | None = None  # the last session status read
    last_look = False
    while True:
        data = _read_from(path, offset)
        walk = walk_journal(data, seq, JournalMark(seq, 0, 0), seq)
        if walk.fault is not None and not walk.fault.is_last_line:
            raise corrupt_error(path, data, walk.fault)
        records = decode_records(path, walk.tail, seq + 1)
        for line, (record_seq, record) in zip(walk.tail, records, strict=True):
            yield JournalEntry(record_seq, written_at(line), record)
            if isinstance(record, SessionStatusChanged):
                status = record.status
        offset, seq = offset + walk.end_offset, walk.last_seq
        caught_up = walk.end_offset == len(data)
        if (caught_up and status not in (None, "running")) or last_look:
            return
        if not walk.tail:
            # A session whose process is gone stopped (left running, or a resume of it
            # killed mid-line): one last look, for what it wrote just before it went.
            last_look = status is not None and not holder_alive(lock)
            if not last_look:
                await trio.sleep(poll)


def _read_from(path: Path, offset: int) -> bytes:
    """The journal's bytes from `offset` on (a few, a poll's worth: read in place)."""
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size < offset:
                raise JournalCorrupt(
                    f"{path} is now {size} bytes, shorter than the {offset} already read: "
                    "it was cut back (repaired?) while it was being followed",
                    path=path,
                )
            file.seek(offset)
            return file.read()
    except FileNotFoundError:
        if offset:
            raise JournalCorrupt(f"{path} was removed while it was being followed") from None
        return b""  # a session that has not written its first record yet


def holder_alive(lock: Path) -> bool:
    """Whether the process the lock file names (a session's writer) still runs, read
    without taking the lock: False for no file, an empty one (released) or a process
    that is gone; True when it cannot tell (another host's, another user's)."""
    try:
        holder = LockHolder.parse(lock.read_bytes())
    except FileNotFoundError:
        return False
    if holder.pid is None:
        return False
    if holder.host != socket.gethostname():
        return True
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Pace:
    """A replay's clock: `until(written)` waits (trio's clock) until the replay reaches
    a record written at `written` (wall seconds), `speed` times faster than it happened,
    with no wait longer than `gap` seconds (a session that waited overnight does not
    replay overnight); `speed` 0 waits for nothing. `now()` is the wall time the replay
    stands at: the last record's, plus the time since it, at `speed` (at 1 when 0, so
    a session followed live shows its elapsed times moving)."""

    def __init__(self, speed: float = 0.0, *, gap: float = GAP) -> None:
        if speed < 0:
            raise ValueError(f"a replay's speed must not be negative: {speed}")
        self.speed = speed
        self.gap = gap
        self._written: float | None = None  # the last record's time
        self._reached = 0.0  # trio's time at which the replay reached it

    async def until(self, written: float) -> None:
        current = trio.current_time()
        if self._written is not None and self.speed > 0:
            wait = min(max(written - self._written, 0.0) / self.speed, self.gap)
            # Behind the schedule (a slow terminal), the replay goes on from now.
            self._reached = max(self._reached + wait, current)
            await trio.sleep_until(self._reached)
        else:
            self._reached = current
        self._written = written

    def now(self) -> float:
        if self._written is None:
            return time.time()
        return self._written + (trio.current_time() - self._reached) * (self.speed or 1.0)
