"""The journals of a worker's tasks written together: group commit across tasks.

Each task on a worker writes its records through its `TaskSession`, a batch at a time;
with many tasks running, their batches come in together. `GroupCommit.append` puts a
task's batch in the next transaction the worker makes (`Store.append_all`): the first
caller with nothing in flight writes everything queued, and again whatever came in
meanwhile, until nothing is left; the others wait for the transaction that holds
theirs. A task's records are written in its own order (its `TaskSession` has one batch
in flight at a time); a batch another process fenced (`Fenced`) fails its own task only.
The writing runs in the caller's task, so a caller shielded from cancellation (a task's
session writing its last records as the worker stops) is never left waiting on a
writer that was cancelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import trio

from orchestrator.engine.retry import Patience
from orchestrator.engine.store import Store


@dataclass
class _Batch:
    key: str
    lines: Sequence[tuple[int, bytes]]
    done: trio.Event = field(default_factory=trio.Event)  # written (or failed), or its turn
    lead: bool = False  # its caller writes the next transaction
    error: BaseException | None = None  # `Fenced`, or `_Alone`: to write by itself


class GroupCommit:
    """The appends of the tasks of one worker to their journals in `store`, through `db`."""

    def __init__(self, store: Store, db: Patience) -> None:
        self._store = store
        self._db = db
        self._queued: list[_Batch] = []
        self._writing = False  # a transaction is in flight, or its next writer woken
        self.transactions = 0  # how many it made

    async def append(self, key: str, lines: Sequence[tuple[int, bytes]]) -> None:
        """Write `lines` (seq, line) to task `key`'s journal, with what other tasks
        append meanwhile; `Fenced` when another process wrote one of those seqs."""
        batch = _Batch(key, lines)
        self._queued.append(batch)
        if self._writing:
            try:
                await batch.done.wait()
            except BaseException:  # (cancelled: unless taken already, it is not written)
                if batch in self._queued:
                    self._queued.remove(batch)
                if batch.lead:
                    self._pass_lead()
                raise
        else:
            batch.lead = True
        if batch.lead:
            await self._write()
        if isinstance(batch.error, _Alone):  # (the transaction holding it failed)
            await self._db.call(self._store.append, key, lines)
        elif batch.error is not None:
            raise batch.error

    async def _write(self) -> None:
        """Everything queued, in one transaction; then the next caller waiting writes."""
        self._writing = True
        taken, self._queued = self._queued, []
        try:
            self.transactions += 1
            journals = [(b.key, b.lines) for b in taken]
            fenced = await self._db.call(self._store.append_all, journals)
        except BaseException:
            for batch in taken:
                batch.error = _Alone()
                batch.done.set()
            raise
        finally:
            self._pass_lead()
        for batch in taken:
            batch.error = fenced.get(batch.key)
            batch.done.set()

    def _pass_lead(self) -> None:
        self._writing = bool(self._queued)
        if self._queued:
            self._queued[0].lead = True
            self._queued[0].done.set()


class _Alone(Exception):
    """A batch to write by itself: the transaction that held it failed."""
