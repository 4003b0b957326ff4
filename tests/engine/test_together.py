"""A worker's tasks write and read their journals together (engine/together.py): the
batches that come in while a transaction is in flight go in the next one, each task's
records in its own order; a task another process fenced fails alone; a batch whose
caller was cancelled before it was taken is not written, and the others go on; the reads
that come in while one is made are made in one query; new tasks' seeds go in with
their runs. On a real `Store`, a SQLite file."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import trio
import trio.testing

pytest.importorskip("dbos")

from orchestrator.engine import sqlite_url
from orchestrator.engine.retry import Patience
from orchestrator.engine.rows import Lines
from orchestrator.engine.store import Fenced, Run, Store
from orchestrator.engine.together import TaskCalls, Together


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    made = Store(sqlite_url(tmp_path / "engine.sqlite"))
    try:
        yield made
    finally:
        made.close()


async def _ignore(notice: object) -> None:
    pass


def lines(key: str, *seqs: int) -> list[tuple[int, bytes]]:
    return [(seq, f"{key} {seq}\n".encode()) for seq in seqs]


async def test_what_comes_in_during_a_transaction_goes_in_the_next(store: Store) -> None:
    group = TaskCalls(store, Patience(_ignore))
    async with trio.open_nursery() as nursery:
        for key in ("s/a", "s/b", "s/c"):  # (the first writes alone; the others wait for it)
            nursery.start_soon(group.append, key, lines(key, 1, 2))
    assert group.appends.calls == 2
    await group.append("s/a", lines("s/a", 3))
    assert group.appends.calls == 3
    assert store.records("s/a") == lines("s/a", 1, 2, 3)
    assert store.records("s/b") == lines("s/b", 1, 2)
    tail = store.session_tail("s", {})
    assert {key: [seq for seq, _ in found] for key, found in tail.items()} == {
        "s/a": [1, 2, 3],
        "s/b": [1, 2],
        "s/c": [1, 2],
    }  # (their heads moved: made for the first records)


async def test_a_task_another_process_fenced_fails_alone(store: Store) -> None:
    store.append("s/b", lines("s/b", 1))  # (another worker wrote it first)
    group = TaskCalls(store, Patience(_ignore))
    failed: dict[str, BaseException] = {}

    async def append(key: str) -> None:
        try:
            await group.append(key, lines(key, 1, 2))
        except Fenced as exc:
            failed[key] = exc

    async with trio.open_nursery() as nursery:
        for key in ("s/a", "s/b", "s/c"):
            nursery.start_soon(append, key)
    assert list(failed) == ["s/b"]
    assert store.records("s/a") == lines("s/a", 1, 2)
    assert store.records("s/b") == lines("s/b", 1)
    assert store.records("s/c") == lines("s/c", 1, 2)


async def test_a_batch_cancelled_before_it_is_taken_is_not_written(
    store: Store, tmp_path: Path
) -> None:
    store.records("s/a")  # (its tables made)
    group = TaskCalls(store, Patience(_ignore))
    other = sqlite3.connect(tmp_path / "engine.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # the file locked: the first transaction waits
    async with trio.open_nursery() as nursery:
        nursery.start_soon(group.append, "s/a", lines("s/a", 1))
        await trio.testing.wait_all_tasks_blocked()
        with trio.CancelScope() as waiting:
            nursery.start_soon(group.append, "s/c", lines("s/c", 1))
            waiting.cancel()  # (as it waits for the transaction in flight)
            await group.append("s/b", lines("s/b", 1))
        other.execute("COMMIT")
    other.close()
    assert waiting.cancelled_caught
    assert group.appends.calls == 2
    assert store.records("s/a") == lines("s/a", 1)
    assert store.records("s/b") == []
    assert store.records("s/c") == lines("s/c", 1)


async def test_a_batch_whose_caller_was_cancelled_may_commit_and_the_others_are_not_fenced(
    tmp_path: Path,
) -> None:
    # The caller making a batch is cancelled while its thread writes: abandoned, the
    # thread still commits. The batch's other caller then writes alone and meets its own
    # records, which is its write made, not another process's (`Fenced`). (The threads'
    # waits end after 10 s: a batch made otherwise fails the test, not hangs it.)
    entered = trio.Event()
    first, release, written = threading.Event(), threading.Event(), threading.Event()

    class Held(Store):
        def append_all(
            self, journals: Sequence[tuple[str, Lines]], runs: Sequence[Run] = ()
        ) -> None:
            if "s/a" in dict(journals):
                first.wait(10)
                return super().append_all(journals, runs)
            trio.from_thread.run_sync(entered.set)
            release.wait(10)
            super().append_all(journals, runs)
            written.set()

        def append(self, task: str, lines: Lines, *, run: Run | None = None) -> None:
            written.wait(10)  # (the order the race can take: the batch's commit first)
            super().append(task, lines, run=run)

    store = Held(sqlite_url(tmp_path / "engine.sqlite"))
    group = TaskCalls(store, Patience(_ignore))
    leading = trio.CancelScope()

    async def lead() -> None:
        with leading:
            await group.append("s/b", lines("s/b", 1))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(group.append, "s/a", lines("s/a", 1))
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(lead)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(group.append, "s/c", lines("s/c", 1))
        await trio.testing.wait_all_tasks_blocked()
        first.set()
        await entered.wait()  # (b makes the batch of b and c)
        leading.cancel()
        await trio.testing.wait_all_tasks_blocked()
        release.set()
    assert leading.cancelled_caught
    assert group.appends.calls == 2
    assert store.records_of(["s/a", "s/b", "s/c"]) == {
        key: lines(key, 1) for key in ("s/a", "s/b", "s/c")
    }
    store.close()


async def test_the_reads_that_come_in_while_one_is_made_are_made_in_one_query(
    store: Store,
) -> None:
    store.append("s/a", lines("s/a", 1, 2))
    store.append("s/b", lines("s/b", 1))
    group = TaskCalls(store, Patience(_ignore))
    read: dict[str, list[tuple[int, bytes]]] = {}

    async def records(key: str) -> None:
        read[key] = await group.records(key)

    async with trio.open_nursery() as nursery:
        for key in ("s/a", "s/b", "s/c", "s/a"):
            nursery.start_soon(records, key)
    assert group.reads.calls == 2
    assert read == {"s/a": lines("s/a", 1, 2), "s/b": lines("s/b", 1), "s/c": []}
    assert store.records_of(["s/b", "s/a"]) == {"s/a": lines("s/a", 1, 2), "s/b": lines("s/b", 1)}


async def test_when_the_call_for_many_fails_the_others_each_make_their_own() -> None:
    release = trio.Event()
    made: list[list[int]] = []

    async def many(args: list[int]) -> list[int]:
        made.append(args)
        await release.wait()
        if 1 in args:
            raise ValueError("the call for many failed")  # (of 1's making, or of 2's)
        return [arg * 10 for arg in args]

    async def one(arg: int) -> int:
        return -arg

    together: Together[int, int] = Together(many, one)
    got: dict[int, int | str] = {}

    async def call(arg: int) -> None:
        try:
            got[arg] = await together.call(arg)
        except ValueError as exc:
            got[arg] = str(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call, 0)
        await trio.testing.wait_all_tasks_blocked()
        for arg in (1, 2):
            nursery.start_soon(call, arg)
        await trio.testing.wait_all_tasks_blocked()
        release.set()
    await call(3)  # (and the next calls go on together)
    assert [sorted(args) for args in made] == [[0], [1, 2], [3]]
    assert got == {0: 0, 1: -1, 2: -2, 3: 30}


async def test_new_tasks_seeds_and_runs_go_in_one_transaction_and_a_fenced_one_alone(
    store: Store,
) -> None:
    # A session's tasks begun at once: their first records and first runs together; a
    # seed another process wrote first fails alone, its run left out with it.
    store.append("s/b", lines("s/b", 1))
    group = TaskCalls(store, Patience(_ignore))
    failed: list[str] = []

    async def seed(key: str) -> None:
        run = Run(key, key, "1", "/w", "m") if key != "s/c" else None  # (c: begun before)
        try:
            await group.seed(key, lines(key, 1, 2), run)
        except Fenced:
            failed.append(key)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(seed, "s/a")
        await trio.testing.wait_all_tasks_blocked()
        for key in ("s/b", "s/c", "s/d"):
            nursery.start_soon(seed, key)
    assert failed == ["s/b"]
    assert group.seeds.calls == 2
    assert store.records_of(["s/a", "s/b", "s/c", "s/d"]) == {
        "s/a": lines("s/a", 1, 2),
        "s/b": lines("s/b", 1),
        "s/c": lines("s/c", 1, 2),
        "s/d": lines("s/d", 1, 2),
    }
    assert [key for key in ("s/a", "s/b", "s/c", "s/d") if store.run(key)] == ["s/a", "s/d"]
