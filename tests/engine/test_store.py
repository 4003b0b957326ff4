"""The engine's own tables (engine/store.py): made by whichever process comes first."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

pytest.importorskip("dbos")

from orchestrator.engine import sqlite_url
from orchestrator.engine.store import Fenced, Run, Store, Taken


def test_processes_making_the_tables_at_once_all_get_them(tmp_path: Path) -> None:
    # A session and its workers start on a new database at once: each store looks for
    # the tables, then makes them, and the second to make one finds it there already.
    for attempt in range(8):
        url = sqlite_url(tmp_path / f"engine{attempt}.sqlite")
        stores = [Store(url) for _ in range(6)]
        start = threading.Barrier(len(stores))
        failed: list[BaseException] = []

        def first_use(store: Store, start: threading.Barrier, failed: list[BaseException]) -> None:
            start.wait()
            try:
                store.session_tail("s", {})
            except BaseException as exc:
                failed.append(exc)

        threads = [threading.Thread(target=first_use, args=(s, start, failed)) for s in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for store in stores:
            store.close()
        assert not failed, failed[0]


@pytest.fixture(name="store", params=["sqlite", "postgres"])
def store_on_either(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Store]:
    """A store on SQLite, and one on a database of its own on the tests' Postgres (the
    stand-ins for DBOS's tables some tests make stay there)."""
    if request.param == "sqlite":
        url = sqlite_url(tmp_path / "engine.sqlite")
    else:
        base = request.getfixturevalue("postgres_url").rsplit("/", 1)[0]
        name = f"store_{uuid.uuid4().hex}"
        server = sa.create_engine(f"{base}/postgres", isolation_level="AUTOCOMMIT")
        with server.connect() as db:
            db.execute(sa.text(f'CREATE DATABASE "{name}"'))
        server.dispose()
        url = f"{base}/{name}"
    store = Store(url)
    yield store
    store.close()


def test_a_task_s_records_are_appended_in_order_and_a_seq_taken_is_fenced(
    store: Store, tmp_path: Path
) -> None:
    # On Postgres a batch is one statement (`unnest` of its seqs and lines), on SQLite
    # one row each: the same records either way, and the same refusal of a taken seq.
    key = f"s-{tmp_path.name}/t1"
    store.append(key, [(1, b'{"seq":1}\n'), (2, b"\x00two\xff\n")])
    store.append(key, [(3, b"three\n")])
    with pytest.raises(Fenced, match="record 3 was written by another"):
        store.append(key, [(3, b"again\n"), (4, b"four\n")])
    with pytest.raises(Fenced, match="record 3 was written by another"):
        store.append(key, [(3, b"three\n"), (4, b"four\n")])  # (3 is, 4 is not)
    store.append(key, [(2, b"\x00two\xff\n"), (3, b"three\n")])  # (exactly these: its own)
    assert store.records(key) == [(1, b'{"seq":1}\n'), (2, b"\x00two\xff\n"), (3, b"three\n")]
    assert store.records(key, after=2) == [(3, b"three\n")]
    assert store.session_tail(key.split("/")[0], {}) == {key: store.records(key)}


def test_a_session_s_tail_holds_the_new_records_of_the_tasks_that_moved(
    store: Store, tmp_path: Path
) -> None:
    # The seqs known travel as one JSON parameter: keys of any characters, a task known
    # up to its head left out, one known further back read from there; a task not named
    # read whole unless only the named are asked for; another session's never.
    session = f"s-{tmp_path.name}"
    odd, plain, new = f'{session}/t"1\\é', f"{session}/t2", f"{session}/t3"
    store.append_all(
        [
            (odd, [(1, b"odd 1\n"), (2, b"odd 2\n")]),
            (plain, [(1, b"plain 1\n")]),
            (new, [(1, b"new 1\n"), (2, b"new 2\n")]),
            (f"{session}x/t1", [(1, b"other session\n")]),
        ]
    )
    known = {odd: 1, plain: 1, f"{session}/gone": 4}
    assert store.session_tail(session, known) == {
        odd: [(2, b"odd 2\n")],
        new: [(1, b"new 1\n"), (2, b"new 2\n")],
    }
    assert store.session_tail(session, known, named_only=True) == {odd: [(2, b"odd 2\n")]}
    assert store.session_tail(session, {odd: 2, plain: 1, new: 2}) == {}


def test_several_tasks_records_are_appended_and_read_together(store: Store, tmp_path: Path) -> None:
    # A worker's tasks' batches in one transaction (on Postgres one statement), their
    # heads moved or made; a seq taken fails the whole (each then appends its own).
    session = f"s-{tmp_path.name}"
    one, two = f"{session}/t1", f"{session}/t2"
    store.append(one, [(1, b"one 1\n")])
    store.append_all([(one, [(2, b"one 2\n"), (3, b"\x00one 3\xff\n")]), (two, [(1, b"two 1\n")])])
    with pytest.raises(Fenced):
        store.append_all([(two, [(2, b"two 2\n")]), (one, [(3, b"again\n")])])
    assert store.records_of([two, one, f"{session}/t3"]) == {
        one: [(1, b"one 1\n"), (2, b"one 2\n"), (3, b"\x00one 3\xff\n")],
        two: [(1, b"two 1\n")],
    }
    assert store.session_tail(session, {}) == store.records_of([one, two])
    # The runs of tasks taken at once, read together: one missing is left out; with
    # each, how many messages DBOS recorded its workflow receiving (its steps apart).
    runs = [Run(f"{session}/t{n}", f"{session}/t{n}", "1", "/w", "m") for n in (1, 2)]
    for run in runs:
        store.add_run(run)
    store.cancel_run(runs[1].workflow_id)
    first, second = runs[0].workflow_id, runs[1].workflow_id
    _dbos_operations(
        store, [(second, 0, "DBOS.recv"), (second, 2, "step"), (second, 3, "DBOS.recv")]
    )
    found = store.runs_to_take([second, "nobody", first])
    assert found == {first: Taken(runs[0], False, 0), second: Taken(runs[1], True, 2)}
    assert store.run_to_take(second) == Taken(runs[1], True, 2)
    assert store.run_to_take("nobody") is None
    assert store.run(first) == runs[0]


def _dbos_operations(store: Store, rows: list[tuple[str, int, str]]) -> None:
    """`rows` (workflow, step, name) in DBOS's record of its workflows' operations, as
    far as the store reads it (the table made when DBOS has not made it)."""
    columns = "workflow_uuid TEXT, function_id INTEGER, function_name TEXT"
    _dbos_rows(store, "operation_outputs", columns, rows)


def _dbos_rows(store: Store, table: str, columns: str, rows: list[tuple[object, ...]]) -> None:
    """`rows` in DBOS's `table`, made with `columns` (the ones the store reads) unless
    DBOS made it, in its schema on Postgres."""
    with store._begin() as db:
        if db.dialect.name == "postgresql":
            db.execute(sa.text("CREATE SCHEMA IF NOT EXISTS dbos"))
            table = f"dbos.{table}"
        db.execute(sa.text(f"CREATE TABLE IF NOT EXISTS {table} ({columns})"))
        names = ", ".join(column.split()[0] for column in columns.split(", "))
        marks = ", ".join(f":v{n}" for n in range(len(rows[0])))
        insert = sa.text(f"INSERT INTO {table} ({names}) VALUES ({marks})")
        db.execute(insert, [{f"v{n}": value for n, value in enumerate(row)} for row in rows])


def test_the_workflows_that_mail_waits_for_are_read_in_one_statement(
    store: Store, tmp_path: Path
) -> None:
    # The workflows asked of travel as one parameter (ids of any characters); mail on
    # another topic, consumed, or for a workflow not asked of does not count.
    run = tmp_path.name
    odd, plain, done, other = f'{run}/t"1\\', f"{run}/t2", f"{run}/t3", f"{run}/t4"
    columns = "destination_uuid TEXT, topic TEXT, message TEXT, consumed BOOLEAN"
    _dbos_rows(
        store,
        "notifications",
        columns,
        [
            (odd, "mail", "a", False),
            (odd, "mail", "b", False),
            (plain, "cancel", "c", False),
            (done, "mail", "d", True),
            (other, "mail", "e", False),
        ],
    )
    assert store.mailed([odd, plain, done, f"{run}/t5"], "mail") == {odd}
    assert store.mailed([plain], "cancel") == {plain}
    assert store.mailed([], "mail") == set()
