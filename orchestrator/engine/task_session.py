"""A remote task's session: the records of one delegated task that runs on a worker, kept
in the engine's database (`Store`) instead of a session's journal file, and folded into a
`SessionState` of its own, as a `LiveSession` folds a session's.

It is a `SessionLike` (team/port.py): a worker runs a team over it, and the task's loop
journals and folds through it exactly as it does in a session on disk. Its records are
written the way a session's journal writes them under its `batch` policy: a record is
folded at once and queued, and a writer (`writing`) puts everything queued in the
database in one transaction as soon as the loop yields; a record emitted `durable` (the
start of a call with a side effect, the write-ahead rule) is in the database before
`emit` returns, with everything queued before it, so a side effect is never ahead of its
record. What the worker acknowledges to others (mail posted, before its step's output is
recorded; the task's end, before its workflow is woken) waits for `flush`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from orchestrator.engine.retry import Patience
from orchestrator.engine.store import Store
from orchestrator.engine.together import TaskCalls
from orchestrator.session.on_workers import Rows, fold
from orchestrator.state.events import Event, Record
from orchestrator.state.fold import SessionState
from orchestrator.state.tasks import now_ms
from orchestrator.store._line import encode

__all__ = ["TaskSession", "fold", "line_of"]  # `fold` is the report's too (session/)

MAX_QUEUED = 256  # records queued unwritten before an emit waits for the writer (backpressure)


class TaskSession:
    """The session of remote task `key` (`<session id>/<task id>`) in `store`."""

    def __init__(
        self,
        store: Store,
        key: str,
        state: SessionState,
        db: Patience,
        group: TaskCalls | None = None,
    ) -> None:
        self.state = state
        self.key = key
        self._store = store
        self._db = db  # its writes wait while the database cannot be reached
        self._group = group  # its writes in its worker's transactions (None: its own)
        self._waiting: list[tuple[int, bytes]] = []  # encoded, folded, not yet written
        self._written = state.seq
        self._writing = trio.Lock()
        self._queued = trio.Event()  # something waits for the writer
        self._writer = False  # a writer runs (`writing`): non-durable records need not wait
        self._failed: BaseException | None = None  # the writer's error, raised to the loop

    @classmethod
    async def load(cls, store: Store, key: str, db: Patience) -> TaskSession:
        """The task's session as its records in `store` leave it."""
        return cls.of_rows(store, key, await db.call(store.records, key), db)

    @classmethod
    def of_rows(
        cls, store: Store, key: str, rows: Rows, db: Patience, group: TaskCalls | None = None
    ) -> TaskSession:
        """The task's session as `rows`, its records read from `store`, leave it; its
        records written with its worker's other tasks' by `group`, when given."""
        return cls(store, key, fold(key, rows), db, group)

    @property
    def queued(self) -> int:
        """How many records wait for the writer to take them."""
        return len(self._waiting)

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        """A writer for the block: records not emitted `durable` are written behind the
        loop, a batch a pass; everything queued is written when the block ends."""
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._keep_writing)
                self._writer = True
                try:
                    yield
                finally:
                    self._writer = False
                    nursery.cancel_scope.cancel()
        finally:  # (also when the loop was cancelled: the worker stopping)
            if self._failed is None:
                with trio.CancelScope(shield=True):
                    await self._write_through(self.state.seq)

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        """Fold the event's record and queue it; return once it is written when `durable`
        (or without a writer), else at once."""
        if self._failed is not None:
            raise self._failed
        record = event.record()
        if record is None:
            if durable:
                await self.flush()
            return
        seq = self.state.seq + 1
        self._waiting.append((seq, line_of(seq, record)))
        self.state.apply(seq, record)
        if durable or not self._writer or len(self._waiting) >= MAX_QUEUED:
            await self._write_through(seq)
        else:
            self._queued.set()

    async def flush(self) -> None:
        """Return once every record emitted so far is in the database."""
        if self._failed is not None:
            raise self._failed
        await self._write_through(self.state.seq)

    async def _keep_writing(self) -> None:
        while True:
            await self._queued.wait()
            self._queued = trio.Event()
            try:
                await self._write_through(self.state.seq)
            except Exception as exc:  # (`Fenced`, say): the loop's next emit raises it
                self._failed = exc
                return

    async def _write_through(self, seq: int) -> None:
        async with self._writing:
            if self._written >= seq or not self._waiting:
                return
            batch, self._waiting = self._waiting, []
            with trio.CancelScope(shield=True):  # records folded are records written
                if self._group is not None:
                    await self._group.append(self.key, batch)
                else:
                    await self._db.call(self._store.append, self.key, batch)
            self._written = batch[-1][0]


def line_of(seq: int, record: Record) -> bytes:
    return encode(seq, now_ms(), record.kind, record.agent, record.journal_body(), end=True)
