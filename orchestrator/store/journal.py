"""The journal writer: framed records appended to `journal.jsonl`, durably, off the trio loop.
Opened by `open_journal` (opening.py).

```python
async with open_journal(path, durability=Durability.BATCH) as journal:
    seq = await journal.append("tool_started", "main", {"call_id": "c1"}, durable=True)
    seqs = await journal.append_batch([("delivered", "main", {...}), ("acked", "w1", {...})])
    await journal.flush()  # everything appended so far is on disk (per the policy)
```

`append` encodes the record and assigns its seq at once, in the calling task, so seqs
follow call order and an unserialisable body raises there (`TypeError`) with nothing
queued. The writer task takes everything queued, writes it with one `os.write` and (per
the policy) one fsync, in a worker thread, then wakes the appenders waiting on it: that is
group commit, one fsync per batch of writes however many tasks append.

Durability policies (`Durability`: `BATCH`, the default, group commit within `max_delay`;
`ALWAYS`; `OFF`) are described in docs/session-format.md#durability-policies.

`room`, `enqueue` and `settle` are `append_batch` in three steps, for a caller that folds
each record as it is numbered (the session); `settle` does not yield when it has nothing
to wait for.

`append_batch` makes its records one atomic batch: only the last carries the batch-end
flag, so if a crash leaves part of it on disk, resume drops all of it.

Cancellation: an append cancelled before it returns may or may not have queued its
record; once queued (the seq assigned), a record is written. Cancelled means "not
acknowledged", never "withdrawn". Appenders wait (backpressure) while more than
8 × `max_batch_bytes` are queued.

A failed write or fsync (a full disk, an I/O error) fails the journal for good (after a
failed fsync the kernel may have dropped the data): every later append, flush or the
context's exit raises `StorageFailed`, chained to the `OSError`, naming the last seq on
disk. What a failed write left of its batch is a torn tail, cut on the next open.
"""

from __future__ import annotations

import enum
import os
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, final

import trio

from orchestrator.errors import SessionError, StorageFailed
from orchestrator.store._fs import sync_data, write_all
from orchestrator.store._line import encode
from orchestrator.store.scan import JournalMark, JournalScan, TailCut

JsonObject = dict[str, Any]
Item = tuple[str, str, JsonObject]
"""What `append_batch` takes per record: (kind, agent, body)."""


class Durability(enum.StrEnum):
    """When an append counts as done; see the module docstring."""

    ALWAYS = "always"
    BATCH = "batch"
    OFF = "off"


class _State(enum.Enum):
    OPEN = "open"
    CLOSING = "closing"  # the context is exiting: no new appends, the writer drains
    CLOSED = "closed"
    FAILED = "failed"  # a write or fsync failed; nothing more is written


@final
class Journal:
    """An open journal; made by `open_journal`, valid inside its `async with`."""

    def __init__(
        self,
        path: Path,
        fd: int,
        scan: JournalScan,
        *,
        durability: Durability,
        clock: Callable[[], float],
        max_delay: float,
        max_batch_bytes: int,
    ) -> None:
        self._path = path
        self._fd = fd
        self._cut = scan.cut
        self._durability = durability
        self._clock = clock
        self._max_delay = max_delay
        self._max_batch_bytes = max_batch_bytes
        self._max_pending_bytes = 8 * max_batch_bytes
        self._state = _State.OPEN
        self._failure: OSError | None = None
        self._last_seq = scan.last_seq
        self._durable_seq = scan.last_seq
        self._mark = scan.end
        self._durable_mark = scan.end
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._durable_waiters = 0
        self._wakeup = trio.Event()  # set: the writer has work (or should stop)
        self._urgent = trio.Event()  # set: the writer should not wait for more
        self._progress = trio.Event()  # set (then replaced): a write landed, or failed
        self._drained = trio.Event()  # set (then replaced): the writer took the queue
        self._writer_done = trio.Event()
        self._writer_scope = trio.CancelScope(shield=True)

    @property
    def path(self) -> Path:
        return self._path

    @property
    def mark(self) -> JournalMark:
        """The journal as appended so far (written or still queued): its last seq, its
        length and the CRC-32 of its bytes. A snapshot keeps it, so that a resume checks
        the journal up to there with one CRC instead of line by line."""
        return self._mark

    @property
    def durability(self) -> Durability:
        return self._durability

    @property
    def last_seq(self) -> int:
        """The seq of the last record appended (queued or written); 0 before any."""
        return self._last_seq

    @property
    def durable_seq(self) -> int:
        """The last seq on disk per the policy. A snapshot must not name a later seq."""
        return self._durable_seq

    @property
    def durable_mark(self) -> JournalMark:
        """The journal up to `durable_seq` (the manifest keeps its seq and length)."""
        return self._durable_mark

    @property
    def cut(self) -> TailCut | None:
        """The torn tail that opening truncated away, for the caller to warn about."""
        return self._cut

    async def append(
        self, kind: str, agent: str, body: JsonObject, *, durable: bool = False
    ) -> int:
        """Append one record (a batch of one); return its seq. See the module docstring
        for when it returns."""
        (seq,) = await self.append_batch(((kind, agent, body),), durable=durable)
        return seq

    async def append_batch(self, items: Sequence[Item], *, durable: bool = False) -> list[int]:
        """Append `items` as one atomic batch; return their seqs, in order."""
        await self.room()
        seqs = self.enqueue(items)
        if not await self.settle(seqs[-1] if seqs else 0, durable=durable):
            await trio.lowlevel.cancel_shielded_checkpoint()
        return seqs

    # `append_batch` in three steps, for a caller that must act on the seqs in the order
    # they were given (the session folds each record as it is numbered): wait for room,
    # then number and queue without yielding, then wait until the batch is on disk.

    async def room(self) -> None:
        """Wait (backpressure) until the writer has room for more."""
        await trio.lowlevel.checkpoint_if_cancelled()
        self._check_open()
        while self._pending_bytes >= self._max_pending_bytes:
            self._urgent.set()
            await self._drained.wait()
            self._check_open()

    def enqueue(self, items: Sequence[Item]) -> list[int]:
        """Number `items` and queue them for writing as one batch; no waiting."""
        self._check_open()
        first = self._last_seq + 1
        lines = self._encode(items, first)
        if lines:
            self._pending.extend(lines)
            size = sum(map(len, lines))
            self._pending_bytes += size
            self._last_seq += len(lines)
            crc = self._mark.crc
            for line in lines:
                crc = zlib.crc32(line, crc)
            self._mark = JournalMark(self._last_seq, self._mark.offset + size, crc)
            self._wakeup.set()
            if self._pending_bytes >= self._max_batch_bytes:
                self._urgent.set()
        return list(range(first, self._last_seq + 1))

    async def settle(self, seq: int, *, durable: bool = False) -> bool:
        """Return when record `seq` is as safe as the policy (or `durable`) asks; whether
        that took waiting. When it does not, this returns at once, without yielding: a
        caller that appends a record per step (the session) yields at its own checkpoints,
        and a yield per record would cost a pass of the scheduler each."""
        if seq and (durable or self._durability is Durability.ALWAYS):
            await self._wait_durable(seq)
            return True
        return False

    async def flush(self) -> None:
        """Return once every record appended so far is on disk (per the policy)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        self._check_open()
        if self._durable_seq < self._last_seq:
            await self._wait_durable(self._last_seq)
        else:
            await trio.lowlevel.cancel_shielded_checkpoint()

    def _encode(self, items: Sequence[Item], first: int) -> list[bytes]:
        now = round(self._clock() * 1000)
        last_index = len(items) - 1
        lines = []
        for index, (kind, agent, body) in enumerate(items):
            if not isinstance(kind, str) or not kind or not isinstance(agent, str):
                raise TypeError(
                    f"kind and agent must be strings, kind non-empty: {kind!r}, {agent!r}"
                )
            lines.append(encode(first + index, now, kind, agent, body, end=index == last_index))
        return lines

    async def _wait_durable(self, seq: int) -> None:
        self._durable_waiters += 1
        self._urgent.set()
        try:
            while self._durable_seq < seq:
                self._check_not_failed()
                if self._state is _State.CLOSED:  # closed before the writer got to it
                    raise trio.ClosedResourceError(f"the journal {self._path} is closed")
                await self._progress.wait()
        finally:
            self._durable_waiters -= 1

    def _check_open(self) -> None:
        self._check_not_failed()
        if self._state is not _State.OPEN:
            raise trio.ClosedResourceError(f"the journal {self._path} is closed")

    def _check_not_failed(self) -> None:
        if self._failure is not None:
            raise StorageFailed(
                f"writing the journal {self._path} failed ({self._failure}); records after "
                f"seq {self._durable_seq} may be lost, and nothing more is written",
                path=self._path,
                cause=self._failure,
                kept_seq=self._durable_seq,
            ) from self._failure

    # --- the writer task ------------------------------------------------------------------

    async def run_writer(self) -> None:
        """The writer task (`open_journal` starts it in its nursery)."""
        # Shielded: a cancelled session must still get its queued records to disk. The
        # context's exit stops the writer by draining it, or after `close_timeout` by
        # cancelling this scope.
        with self._writer_scope:
            try:
                while True:
                    if not self._pending:
                        if self._state is not _State.OPEN:
                            return
                        self._wakeup = trio.Event()
                        await self._wakeup.wait()
                        continue
                    if self._should_linger():
                        self._urgent = trio.Event()
                        with trio.move_on_after(self._max_delay):
                            await self._urgent.wait()
                    if not await self._write_pending():
                        return
            finally:
                self._writer_done.set()

    def _should_linger(self) -> bool:
        return (
            self._state is _State.OPEN
            and self._durability is not Durability.ALWAYS
            and self._durable_waiters == 0
            and self._pending_bytes < self._max_batch_bytes
            and self._max_delay > 0
        )

    async def _write_pending(self) -> bool:
        """Write (and sync) everything queued; False once the journal has failed."""
        chunk = b"".join(self._pending)
        last, mark = self._last_seq, self._mark
        self._pending = []
        self._pending_bytes = 0
        self._drained.set()
        self._drained = trio.Event()
        try:
            await trio.to_thread.run_sync(self._write, chunk)
        except OSError as exc:
            self._failure = exc
            self._state = _State.FAILED
            self._drained.set()
        else:
            self._durable_seq, self._durable_mark = last, mark
        finally:
            self._progress.set()  # waiters wake to a new durable_seq, or to the failure
            self._progress = trio.Event()
        return self._failure is None

    def _write(self, chunk: bytes) -> None:  # in a worker thread
        write_all(self._fd, chunk)
        if self._durability is not Durability.OFF:
            sync_data(self._fd)

    # --- lifecycle, driven by the context manager (store/opening.py) ----------------------

    async def drain(self, seconds: float) -> None:
        """Stop taking appends and let the writer write what is queued, for up to
        `seconds`; then stop it."""
        self._begin_close()
        with trio.move_on_after(seconds, shield=True):
            await self._writer_done.wait()
        # A no-op when the writer has drained; otherwise it stops once its thread returns.
        self._writer_scope.cancel()

    def _begin_close(self) -> None:
        """Stop taking appends; the writer drains the queue, then returns."""
        if self._state is _State.OPEN:
            self._state = _State.CLOSING
        self._wakeup.set()
        self._urgent.set()
        self._drained.set()  # appenders held by backpressure see the state and leave

    def finish(self) -> None:
        """The writer has stopped: close the file and release anyone still waiting."""
        if self._state is not _State.FAILED:
            self._state = _State.CLOSED
        os.close(self._fd)
        self._progress.set()
        self._drained.set()

    def lost_records_error(self) -> SessionError | None:
        """Why records appended may not be on disk after `finish` (None: all are)."""
        if self._failure is not None:
            try:
                self._check_not_failed()
            except SessionError as exc:
                return exc
        if self._durable_seq < self._last_seq:
            return SessionError(
                f"closing the journal {self._path} timed out: seq {self._durable_seq + 1}-"
                f"{self._last_seq} may not be on disk"
            )
        return None
