"""A worker's tasks write their journals together (engine/group_commit.py): the batches
that come in while a transaction is in flight go in the next one, each task's records in
its own order; a task another process fenced fails alone; a batch whose caller was
cancelled before it was taken is not written, and the others go on. On a real `Store`, a
SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trio.testing

pytest.importorskip("dbos")

from orchestrator.engine import sqlite_url
from orchestrator.engine.retry import Patience
from orchestrator.engine.store import Fenced, Store
from orchestrator.engine.together import GroupCommit


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
    group = GroupCommit(store, Patience(_ignore))
    async with trio.open_nursery() as nursery:
        for key in ("s/a", "s/b", "s/c"):  # (the first writes alone; the others wait for it)
            nursery.start_soon(group.append, key, lines(key, 1, 2))
    assert group.transactions == 2
    await group.append("s/a", lines("s/a", 3))
    assert group.transactions == 3
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
    group = GroupCommit(store, Patience(_ignore))
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
    group = GroupCommit(store, Patience(_ignore))
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
    assert group.transactions == 2
    assert store.records("s/a") == lines("s/a", 1)
    assert store.records("s/b") == []
    assert store.records("s/c") == lines("s/c", 1)
