"""A task on a worker journals in the engine's database the way a session's journal
writes under its `batch` policy (engine/task_session.py): records queue and are written
behind the loop, a batch a pass; a durable record is written, with all before it, before
`emit` returns; whatever is queued is written when the writer's block ends; a record
another process wrote first fails the loop's next emit. Here on a real `Store`, a SQLite
file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.testing

pytest.importorskip("dbos")

from orchestrator import AgentStarted, SystemMessage
from orchestrator.engine import sqlite_url
from orchestrator.engine.retry import Patience
from orchestrator.engine.store import Fenced, Store
from orchestrator.engine.task_session import TaskSession, line_of
from orchestrator.state.events import TurnEnded, TurnStarted

KEY = "s1/t1"


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[TaskSession]:
    store = Store(sqlite_url(tmp_path / "engine.sqlite"))
    try:
        made = await TaskSession.load(store, KEY, Patience(_ignore))
        await made.emit(AgentStarted(agent="t1", role="worker", messages=(SystemMessage("go"),)))
        yield made
    finally:
        store.close()


async def _ignore(notice: object) -> None:
    pass


def written(session: TaskSession) -> list[int]:
    """The seqs of the task's journal in the database, read by another connection."""
    return [seq for seq, _ in session._store.records(KEY)]


async def test_without_a_writer_each_record_is_written_before_emit_returns(
    session: TaskSession,
) -> None:
    await session.emit(TurnStarted(agent="t1"))
    assert written(session) == [1, 2]


async def test_records_are_written_behind_the_loop_a_batch_a_pass(session: TaskSession) -> None:
    async with session.writing():
        for _ in range(5):
            await session.emit(TurnStarted(agent="t1"))
        assert session.state.seq == 6  # folded at once,
        assert (written(session), session.queued) == ([1], 5)  # and not waited for
        await trio.testing.wait_all_tasks_blocked()
        assert session.queued == 0  # the writer took the five in one pass
        await session.flush()  # (once its write is done)
        assert written(session) == [1, 2, 3, 4, 5, 6]


async def test_a_durable_record_is_written_with_all_before_it_before_emit_returns(
    session: TaskSession,
) -> None:
    async with session.writing():
        await session.emit(TurnStarted(agent="t1"))
        await session.emit(TurnStarted(agent="t1"))
        await session.emit(TurnEnded(agent="t1", reason="completed", rounds=1), durable=True)
        assert written(session) == [1, 2, 3, 4]
        await session.emit(TurnStarted(agent="t1"))
        await session.flush()  # what the worker acknowledges waits for this
        assert written(session) == [1, 2, 3, 4, 5]


async def test_what_is_queued_is_written_when_the_block_ends(session: TaskSession) -> None:
    async with session.writing():
        await session.emit(TurnStarted(agent="t1"))
        await session.emit(TurnStarted(agent="t1"))
        assert written(session) == [1]
    assert written(session) == [1, 2, 3]


async def test_a_record_another_process_wrote_first_fails_the_next_emit(
    session: TaskSession,
) -> None:
    # Another worker took the task over and wrote record 2 first: this one must stop.
    # (A record of its own: the same line, written in the same millisecond, is what
    # `Store.append` takes for this writer's own write made already.)
    theirs = TurnEnded(agent="t1", reason="completed", rounds=1)
    session._store.append(KEY, [(2, line_of(2, theirs.record()))])
    fenced = pytest.RaisesExc(Fenced, match="record 2 was written by another")
    with pytest.RaisesGroup(fenced):
        async with session.writing():
            await session.emit(TurnStarted(agent="t1"))  # queued: its write fails behind,
            await trio.testing.wait_all_tasks_blocked()
            await session.flush()  # and this (or the emit after it) raises it
            await session.emit(TurnStarted(agent="t1"))
    assert written(session) == [1, 2]
