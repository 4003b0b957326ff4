"""The database calls of a worker's tasks made together: group commit across tasks.

Each task on a worker writes its records through its `TaskSession`, a batch at a time,
and reads its journal when it starts; with many tasks running, their calls come in
together (so do a session's, as it reads and seeds the journals of the tasks it puts
on the queue at once: `RemoteRunner`). `Together.call` puts a task's call in the next
one made for many (`Store.append_all` in one transaction, `Store.records_of` in one
query): the first caller with nothing in flight makes it for everything queued, then
the first of those that came in meanwhile makes the next, and so on; the others wait
for the one that holds theirs. When the call for many fails (a journal another process
`Fenced`, say), each of its callers makes its own, so that a failure is its own task's
alone.

The call runs in its caller's task, so a caller shielded from cancellation (a task's
session writing its last records as the worker stops) never waits on a writer that was
cancelled; a caller cancelled before its part was taken leaves it out. A writer cancelled
while its thread writes leaves that thread to commit or not: the others each write their
own then, and one that meets exactly its own records finds it made (`Store.append`).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import trio

from orchestrator.engine.retry import Patience
from orchestrator.engine.rows import Lines
from orchestrator.engine.store import Run, Store, Taken

A = TypeVar("A")
R = TypeVar("R")


@dataclass
class _Part(Generic[A, R]):
    arg: A
    done: trio.Event = field(default_factory=trio.Event)  # made (or failed), or its turn
    lead: bool = False  # its caller makes the next call
    result: R | None = None
    alone: bool = False  # to make by itself: the call that held it failed


class Together(Generic[A, R]):
    """Calls `one(arg)` that come in while one is in flight, made as `many(args)` (one
    result per arg, in order)."""

    def __init__(
        self, many: Callable[[list[A]], Awaitable[Sequence[R]]], one: Callable[[A], Awaitable[R]]
    ) -> None:
        self._many, self._one = many, one
        self._queued: list[_Part[A, R]] = []
        self._busy = False  # a call is in flight, or its next caller woken to make it
        self.calls = 0  # how many `many` calls it made

    async def call(self, arg: A) -> R:
        part: _Part[A, R] = _Part(arg)
        self._queued.append(part)
        if self._busy:
            try:
                await part.done.wait()
            except BaseException:  # (cancelled: unless taken already, it is not made)
                if part in self._queued:
                    self._queued.remove(part)
                if part.lead:
                    self._pass_lead()
                raise
        else:
            part.lead = True
        if part.lead:
            await self._make()
        if part.alone:
            return await self._one(arg)
        return part.result  # type: ignore[return-value]  # (R itself may be None)

    async def _make(self) -> None:
        """Everything queued, in one call; then the next caller waiting makes its own."""
        self._busy = True
        taken, self._queued = self._queued, []
        try:
            self.calls += 1
            results = await self._many([part.arg for part in taken])
        except BaseException as exc:
            for part in taken:
                part.alone = True
                part.done.set()
            if not isinstance(exc, Exception):
                raise  # (a cancellation: the caller's own)
            return
        finally:
            self._pass_lead()
        for part, result in zip(taken, results, strict=True):
            part.result = result
            part.done.set()

    def _pass_lead(self) -> None:
        self._busy = bool(self._queued)
        if self._queued:
            self._queued[0].lead = True
            self._queued[0].done.set()


Seed = tuple[str, Lines, Run | None]  # a new task's first records, and its first run


class TaskCalls:
    """The calls of the tasks of one worker (or of one session's tasks on workers) to
    their journals in `store`, through `db`: appends (`append`; `seed`, a new task's first
    records with its run: one transaction for all), and reads (`records`, and `run`: the
    run a task is taken for, one query each for all)."""

    def __init__(self, store: Store, db: Patience) -> None:
        self._store, self._db = store, db
        self.appends: Together[tuple[str, Lines], None] = Together(self._append_all, self._append)
        self.seeds: Together[Seed, None] = Together(self._seed_all, self._seed)
        self.reads: Together[str, list[tuple[int, bytes]]] = Together(self._read_all, self._read)
        self.runs: Together[str, Taken | None] = Together(self._runs_all, self._run)

    async def run(self, workflow_id: str) -> Taken | None:
        """What the worker reads of `workflow_id` as it takes it (`Store.run_to_take`),
        read with that of the other tasks taken meanwhile."""
        return await self.runs.call(workflow_id)

    async def _runs_all(self, workflow_ids: list[str]) -> list[Taken | None]:
        found = await self._db.call(self._store.runs_to_take, workflow_ids)
        return [found.get(workflow_id) for workflow_id in workflow_ids]

    async def _run(self, workflow_id: str) -> Taken | None:
        return await self._db.call(self._store.run_to_take, workflow_id)

    async def append(self, key: str, lines: Lines) -> None:
        """Write `lines` (seq, line) to task `key`'s journal, with what other tasks
        append meanwhile; `Fenced` when another process wrote one of those seqs."""
        await self.appends.call((key, lines))

    async def seed(self, key: str, lines: Lines, run: Run | None) -> None:
        """Write a new task's first `lines` to its journal, with its first `run` when
        given, with what other tasks seed meanwhile; `Fenced` as `append`."""
        await self.seeds.call((key, lines, run))

    async def _seed_all(self, seeds: list[Seed]) -> list[None]:
        runs = [run for _, _, run in seeds if run is not None]
        journals = [(key, lines) for key, lines, _ in seeds]
        await self._db.call(self._store.append_all, journals, runs)
        return [None] * len(seeds)

    async def _seed(self, seed: Seed) -> None:
        key, lines, run = seed
        await self._db.call(functools.partial(self._store.append, run=run), key, lines)

    async def records(self, key: str) -> list[tuple[int, bytes]]:
        """Task `key`'s journal, read with those other tasks read meanwhile."""
        return await self.reads.call(key)

    async def _append_all(self, journals: list[tuple[str, Lines]]) -> list[None]:
        await self._db.call(self._store.append_all, journals)  # (`Fenced`: each its own)
        return [None] * len(journals)

    async def _append(self, journal: tuple[str, Lines]) -> None:
        await self._db.call(self._store.append, *journal)

    async def _read_all(self, keys: list[str]) -> list[list[tuple[int, bytes]]]:
        found = await self._db.call(self._store.records_of, keys)
        return [found.get(key, []) for key in keys]

    async def _read(self, key: str) -> list[tuple[int, bytes]]:
        return await self._db.call(self._store.records, key)
