"""A remote task's session: the records of one delegated task that runs on a worker, kept
in the engine's database (`Store`) instead of a session's journal file, and folded into a
`SessionState` of its own, as a `LiveSession` folds a session's.

It is a `SessionLike` (team/port.py): a worker runs a team over it, and the task's loop
journals and folds through it exactly as it does in a session on disk. Every record is in
the database before `emit` returns (several agents' records share one write: the one
that writes takes everything waiting), so a side effect is never ahead of its record.
"""

from __future__ import annotations

import trio

from orchestrator.engine.retry import Patience
from orchestrator.engine.store import Store
from orchestrator.session.on_workers import fold
from orchestrator.state.events import Event, Record
from orchestrator.state.fold import SessionState
from orchestrator.state.tasks import now_ms
from orchestrator.store._line import encode

__all__ = ["TaskSession", "fold", "line_of"]  # `fold` is the report's too (session/)


class TaskSession:
    """The session of remote task `key` (`<session id>/<task id>`) in `store`."""

    def __init__(self, store: Store, key: str, state: SessionState, db: Patience) -> None:
        self.state = state
        self.key = key
        self._store = store
        self._db = db  # its writes wait while the database cannot be reached
        self._waiting: list[tuple[int, bytes]] = []  # encoded, folded, not yet written
        self._written = state.seq
        self._writing = trio.Lock()

    @classmethod
    async def load(cls, store: Store, key: str, db: Patience) -> TaskSession:
        """The task's session as its records in `store` leave it."""
        rows = await db.call(store.records, key)
        return cls(store, key, fold(key, rows), db)

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        """Write the event's record, then return (it is folded at once, in order)."""
        record = event.record()
        if record is None:
            if durable:
                await self._write_through(self.state.seq)
            return
        seq = self.state.seq + 1
        self._waiting.append((seq, line_of(seq, record)))
        self.state.apply(seq, record)
        await self._write_through(seq)

    async def _write_through(self, seq: int) -> None:
        async with self._writing:
            if self._written >= seq or not self._waiting:
                return
            batch, self._waiting = self._waiting, []
            with trio.CancelScope(shield=True):  # records folded are records written
                await self._db.call(self._store.append, self.key, batch)
            self._written = batch[-1][0]


def line_of(seq: int, record: Record) -> bytes:
    return encode(seq, now_ms(), record.kind, record.agent, record.journal_body(), end=True)
