"""The dbos engine's patience with its database (engine/retry.py), on trio's virtual
clock: what is tried again, how long it waits, what it says, and when it gives up. The
attempts here are async callables, so no thread runs while the clock jumps; the real
database going away is tests/engine/test_dbos_outage.py."""

from __future__ import annotations

import itertools
import logging
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

pytest.importorskip("dbos")

import psycopg
from sqlalchemy import exc

from orchestrator import EngineBack, EngineUnreachable, EngineWaiting, ListSink, Notice
from orchestrator.engine.retry import Patience, unreachable

REFUSED = 'connection failed: connection to server at "127.0.0.1", port 5 failed: refused'


def refused() -> exc.OperationalError:
    """What SQLAlchemy raises when Postgres is down (DBOS's launch raises it as is)."""
    return exc.OperationalError("SELECT 1", {}, psycopg.OperationalError(REFUSED))


@asynccontextmanager
async def patience(seconds: float = 600.0) -> AsyncIterator[tuple[Patience, list[Notice]]]:
    sink = ListSink()
    db = Patience(sink.emit, seconds=seconds)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(db.run)
        notices: list[Notice] = sink.events  # type: ignore[assignment]
        yield db, notices
        await trio.testing.wait_all_tasks_blocked()  # the notices sent
        nursery.cancel_scope.cancel()


def failing(
    times: int, error: Callable[[], Exception] = refused
) -> tuple[Callable[[], Awaitable[str]], list[float]]:
    """An attempt that fails `times` times with `error()`, then answers; and the times
    of its attempts."""
    tried: list[float] = []

    async def attempt() -> str:
        tried.append(trio.current_time())
        if len(tried) <= times:
            raise error()
        return "answer"

    return attempt, tried


def refused_waiting(wait: float) -> EngineWaiting:
    """The notice of a first refused connection, trying again in `wait` seconds."""
    first = f"(psycopg.OperationalError) {REFUSED}"
    message = f"the engine's database is unreachable ({first}); trying again in {wait}s"
    return EngineWaiting(agent="engine", message=message, error=first, attempt=1, wait=wait)


async def test_an_outage_is_waited_for_with_backoff_and_told_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    attempt, tried = failing(3)
    async with patience() as (db, notices):
        assert await db.retry(attempt) == "answer"
    assert tried == [0.0, 0.5, 1.5, 3.5]  # waits of 0.5 s, doubling
    assert notices == [
        refused_waiting(0.5),
        EngineBack(
            agent="engine",
            message="the engine's database answers again (after 3.5s)",
            waited=3.5,
        ),
    ]


async def test_the_wait_grows_to_fifteen_seconds_at_most(
    autojump_clock: trio.testing.MockClock,
) -> None:
    attempt, tried = failing(8)
    async with patience() as (db, _):
        await db.retry(attempt)
    waits = [b - a for a, b in itertools.pairwise(tried)]
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0, 15.0]


async def test_past_its_patience_it_gives_up_with_a_clear_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    attempt, tried = failing(1000)
    async with patience(seconds=60) as (db, notices):
        with pytest.raises(EngineUnreachable, match=r"unreachable for 60s .*patience.*resumed"):
            await db.retry(attempt)
    assert tried[-1] == 60.0  # a last attempt at the deadline
    assert [type(n) for n in notices] == [EngineWaiting]
    assert db.gave_up


@pytest.mark.parametrize(
    "error",
    [
        lambda: ValueError("not the database"),
        lambda: exc.OperationalError("x", {}, sqlite3.OperationalError("no such table: t")),
        lambda: exc.IntegrityError("x", {}, psycopg.errors.UniqueViolation("duplicate key")),
    ],
    ids=["other", "sqlite-no-table", "constraint"],
)
async def test_other_errors_are_not_tried_again(
    autojump_clock: trio.testing.MockClock, error: Callable[[], Exception]
) -> None:
    attempt, tried = failing(1, error)
    async with patience() as (db, notices):
        with pytest.raises(type(error())):
            await db.retry(attempt)
    assert tried == [0.0]
    assert notices == []


def test_what_means_the_database_cannot_be_reached() -> None:
    gone = psycopg.errors.AdminShutdown("terminating connection due to administrator command")
    assert unreachable(refused())
    assert unreachable(exc.OperationalError("x", {}, gone))
    assert unreachable(exc.InterfaceError("x", {}, psycopg.InterfaceError("closed")))
    assert unreachable(
        exc.OperationalError("x", {}, sqlite3.OperationalError("database is locked"))
    )
    assert unreachable(exc.TimeoutError("QueuePool limit reached"))
    wrapped = RuntimeError("DBOS could not start")
    wrapped.__cause__ = refused()
    assert unreachable(wrapped)  # DBOS's wrappers say why
    assert not unreachable(RuntimeError("DBOS could not start"))
    assert not unreachable(exc.ProgrammingError("x", {}, psycopg.errors.UndefinedTable("t")))


async def test_calls_at_once_tell_one_outage(autojump_clock: trio.testing.MockClock) -> None:
    async with patience() as (db, notices), trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(db.retry, failing(2)[0])
    assert [type(n) for n in notices] == [EngineWaiting, EngineBack]


async def test_a_call_blocked_in_dbos_is_bounded_by_the_outage_dbos_logs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """DBOS waits for its database by itself, logging each failure: the call that waits
    in it is given up once the outage it logged is older than the patience."""

    async def blocked() -> None:
        await trio.sleep_forever()

    async with patience(seconds=30) as (db, notices):
        with db.watch_dbos():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.to_thread.run_sync, dbos_logs_a_failure)
                with pytest.raises(EngineUnreachable):
                    await db.retry(blocked)
        assert trio.current_time() == 30.0  # from the first failure DBOS logged
    assert notices == [refused_waiting(0.73)]


def dbos_logs_a_failure() -> None:
    """DBOS's warning from its retry loop, as `dbos._sys_db.db_retry` words it, from a
    thread of its own."""
    logging.getLogger("dbos").warning(
        f"Database connection failed: (psycopg.OperationalError) {REFUSED}\n"
        "(Background on this error at: https://sqlalche.me/e/21/e3q8). "
        "Retrying in 0.73s (attempt 1)"
    )


async def test_a_bound_counts_while_the_database_answers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def slow() -> None:
        await trio.sleep_forever()

    async with patience() as (db, _):
        with pytest.raises(trio.TooSlowError):
            await db.retry(slow, bound=10)
        assert trio.current_time() == 10.0
