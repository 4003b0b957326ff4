"""What the dbos engine keeps in its database beside DBOS's own tables, for the tasks that
run on workers (docs/engine.md): each remote task's journal, its runs, and the workers'
heartbeats (mail into a task travels by DBOS's own messages). Plain SQL through
SQLAlchemy (DBOS's own dependency), on SQLite or Postgres alike; every function is
blocking: from trio, call it in a thread.

A task's journal is keyed by `<session id>/<task id>` (all its runs append to it) and
holds the same framed lines as a session's `journal.jsonl`, one row per record. Its key
`(task, seq)` fences writers: a second process that believes it runs the task fails on its
first record, before any side effect that record would have preceded.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from orchestrator.engine.dbos_tables import DbosTables
from orchestrator.engine.rows import Lines, add_records, new_records
from orchestrator.engine.tables import (
    APPROVALS,
    ENGINE_FORMAT,
    META,
    METADATA,
    RECORDS,
    RUNS,
    WORKERS,
)
from orchestrator.errors import ConfigError, OrchestratorError
from orchestrator.state.tasks import now_ms

READER_WAIT = 10  # seconds a reader waits for a connection to Postgres
TAIL_CHUNK = 100  # tasks whose new records one statement reads (`session_tail`)

# The statements a worker runs for every task, made once (their SQL is compiled once per
# dialect and cached by SQLAlchemy; made anew each time, each would be built and keyed).
_ADD_RUN = RUNS.insert()
_RECORDS_AFTER = (
    sa.select(RECORDS.c.seq, RECORDS.c.line)
    .where(RECORDS.c.task == sa.bindparam("key"), RECORDS.c.seq > sa.bindparam("after"))
    .order_by(RECORDS.c.seq)
)
_RECORDS_OF = (
    sa.select(RECORDS.c.task, RECORDS.c.seq, RECORDS.c.line)
    .where(RECORDS.c.task.in_(sa.bindparam("keys", expanding=True)))
    .order_by(RECORDS.c.task, RECORDS.c.seq)
)
_RUN = sa.select(
    RUNS.c.workflow_id,
    RUNS.c.task,
    RUNS.c.version,
    RUNS.c.workspace,
    RUNS.c.model,
    RUNS.c.cancelled,
).where(RUNS.c.workflow_id.in_(sa.bindparam("workflows", expanding=True)))


class Fenced(OrchestratorError):
    """Another process wrote the task's journal first: this one must stop working it."""


@dataclass(frozen=True)
class Run:
    """What a worker needs to know of one run of a task, beyond its journal."""

    workflow_id: str
    task: str  # `<session id>/<task id>`
    version: str
    workspace: str
    model: str


def _row_of(run: Run) -> dict[str, object]:
    """`run` as a new row of the runs' table (not cancelled)."""
    return dataclasses.asdict(run) | {"cancelled": False}


@dataclass(frozen=True)
class Taken:
    """What a worker reads of a workflow it takes: its run, whether the session cancelled
    it, and how many messages DBOS recorded it receiving (a workflow run again, after its
    worker died, replays those before it waits for more)."""

    run: Run
    cancelled: bool
    received: int


@dataclass(frozen=True)
class Worker:
    worker_id: str
    host: str
    pid: int
    version: str
    beat_ms: int
    stopped: bool


class Store:
    """The engine's tables in the database at `url` (made on first use). A `reader`
    (`sessions show`) makes none, and waits at most `READER_WAIT` seconds to connect."""

    def __init__(self, url: str, *, reader: bool = False) -> None:
        sqlite = url.startswith("sqlite")
        # SQLite: several processes share the file; wait for its lock, not fail.
        wait = {"timeout": 60} if sqlite else {"connect_timeout": READER_WAIT} if reader else {}
        # A session's or a worker's: no ping before each use of a pooled connection (a
        # round trip each, several a task); one found dead fails its statement with the
        # connection invalidated, which the caller's `Patience` takes for an outage and
        # tries again, on a new connection. A reader (`sessions watch`) pings.
        ping = reader and not sqlite
        self._engine = sa.create_engine(url, connect_args=wait, pool_pre_ping=ping)
        self._made = threading.Lock()
        self._ready = reader
        self._dbos = DbosTables(sqlite=sqlite)  # (what is read of DBOS's own tables)

    def close(self) -> None:
        self._engine.dispose()

    @contextmanager
    def _begin(self) -> Iterator[sa.Connection]:
        if not self._ready:
            with self._made:
                if not self._ready:
                    _make_tables(self._engine)
                    self._ready = True
        with self._engine.begin() as connection:
            yield connection

    # A task's journal.

    def append(
        self, task: str, lines: Iterable[tuple[int, bytes]], *, run: Run | None = None
    ) -> None:
        """Add records (seq, line) to `task`'s journal in one transaction; `Fenced` when
        one of those seqs is taken (another process works the task). `run`: recorded in
        the same transaction (a new task's first run, with its seed).

        Seqs taken by exactly these lines are this write made already, not another's: a
        batch of several tasks' appends (`append_all`) whose caller was cancelled while
        its abandoned thread still committed, each of the others then writing its own
        (engine/together.py). Its run went in the same transaction."""
        rows = list(lines)
        if not rows:
            return
        try:
            with self._begin() as db:
                if run is not None:
                    db.execute(_ADD_RUN, _row_of(run))
                add_records(db, [(task, rows)])
        except IntegrityError as exc:
            if self.records(task, after=rows[0][0] - 1)[: len(rows)] == rows:
                return
            raise Fenced(f"task {task}: record {rows[0][0]} was written by another") from exc

    def append_all(self, journals: Sequence[tuple[str, Lines]], runs: Sequence[Run] = ()) -> None:
        """`append` for several tasks' journals (task, lines), in one transaction, with
        `runs` (new tasks' first runs, with their seeds); `Fenced` when one of those seqs
        is taken (`append` each, then, to know whose)."""
        try:
            with self._begin() as db:
                if runs:
                    db.execute(_ADD_RUN, [_row_of(r) for r in runs])
                add_records(db, journals)
        except IntegrityError as exc:
            raise Fenced("a record of one of the tasks was written by another") from exc

    def records(self, task: str, after: int = 0) -> list[tuple[int, bytes]]:
        """`task`'s journal after seq `after`, in order."""
        with self._begin() as db:
            rows = db.execute(_RECORDS_AFTER, {"key": task, "after": after})
            return [(seq, bytes(line)) for seq, line in rows]

    def records_of(self, tasks: Sequence[str]) -> dict[str, list[tuple[int, bytes]]]:
        """The journals of `tasks`, by task (none for a task without records), each in
        order: `records` for several tasks, in one query a `TAIL_CHUNK` of them."""
        found: dict[str, list[tuple[int, bytes]]] = {}
        named = sorted(set(tasks))
        with self._begin() as db:
            for start in range(0, len(named), TAIL_CHUNK):
                chunk = named[start : start + TAIL_CHUNK]
                for task, seq, line in db.execute(_RECORDS_OF, {"keys": chunk}):
                    found.setdefault(task, []).append((seq, bytes(line)))
        return found

    def session_records(self, session: str) -> dict[str, list[tuple[int, bytes]]]:
        """Every journal of `session`'s tasks, by task key, each in order (none when the
        table was never made)."""
        query = (
            sa.select(RECORDS.c.task, RECORDS.c.seq, RECORDS.c.line)
            .where(RECORDS.c.task.startswith(f"{session}/", autoescape=True))
            .order_by(RECORDS.c.task, RECORDS.c.seq)
        )
        found: dict[str, list[tuple[int, bytes]]] = {}
        with self._begin() as db:
            if not sa.inspect(db).has_table(RECORDS.name):
                return found
            for task, seq, line in db.execute(query):
                found.setdefault(task, []).append((seq, bytes(line)))
        return found

    def session_tail(
        self, session: str, after: Mapping[str, int], *, named_only: bool = False
    ) -> dict[str, list[tuple[int, bytes]]]:
        """The records of `session`'s tasks past the seq `after` gives for each (all of a
        task it does not name, none with `named_only`), by task key, each in order: of
        the tasks whose heads moved, in one statement."""
        with self._begin() as db:
            return new_records(db, session, after, named_only=named_only)

    # Runs.

    def add_run(self, run: Run) -> None:
        """Record `run` (nothing when it is recorded already)."""
        try:
            with self._begin() as db:
                db.execute(_ADD_RUN, _row_of(run))
        except IntegrityError:
            pass

    def run(self, workflow_id: str) -> Run | None:
        with self._begin() as db:
            row = db.execute(_RUN, {"workflows": [workflow_id]}).first()
            return None if row is None else Run(*row[:-1])

    def run_to_take(self, workflow_id: str) -> Taken | None:
        """The run of `workflow_id`, whether its session cancelled it, and how many
        messages its workflow received (needs DBOS's tables)."""
        return self.runs_to_take([workflow_id]).get(workflow_id)

    def runs_to_take(self, workflow_ids: Sequence[str]) -> dict[str, Taken]:
        """`run_to_take` of several workflows, in one transaction (a worker asks it of
        every task it takes: of those it takes at once together)."""
        with self._begin() as db:
            rows = db.execute(_RUN, {"workflows": list(workflow_ids)}).all()
            received = self._dbos.received(db, list(workflow_ids))
        return {
            row[0]: Taken(Run(*row[:-1]), bool(row[-1]), received.get(row[0], 0)) for row in rows
        }

    def mailed(self, workflow_ids: list[str], topic: str) -> set[str]:
        """Those of `workflow_ids` that DBOS holds unconsumed messages on `topic` for."""
        with self._begin() as db:
            return self._dbos.mailed(db, workflow_ids, topic)

    def cancel_run(self, workflow_id: str) -> None:
        with self._begin() as db:
            db.execute(
                RUNS.update().where(RUNS.c.workflow_id == workflow_id).values(cancelled=True)
            )

    # Approvals: a question of a task on a worker to its session, and the answer.

    def ask(self, approval: str, session: str, task: str, request: bytes) -> bytes | None:
        """Put the question `approval` (nothing when it is there already: a worker that
        took the task over asks the same call again); its answer, if given."""
        try:
            with self._begin() as db:
                db.execute(
                    APPROVALS.insert().values(
                        id=approval, session=session, task=task, request=request, asked_ms=now_ms()
                    )
                )
        except IntegrityError:
            pass
        return self.answer_of(approval)

    def answer_of(self, approval: str) -> bytes | None:
        query = sa.select(APPROVALS.c.answer).where(APPROVALS.c.id == approval)
        with self._begin() as db:
            answer = db.execute(query).scalar()
        return None if answer is None else bytes(answer)

    def unanswered(self, session: str) -> list[tuple[str, str, bytes]]:
        """The questions of `session`'s tasks on workers still to answer: (id, task key,
        request), oldest first."""
        query = (
            sa.select(APPROVALS.c.id, APPROVALS.c.task, APPROVALS.c.request)
            .where(APPROVALS.c.session == session, APPROVALS.c.answer.is_(None))
            .order_by(APPROVALS.c.asked_ms, APPROVALS.c.id)
        )
        with self._begin() as db:
            return [(i, task, bytes(request)) for i, task, request in db.execute(query)]

    def answer(self, approval: str, answer: bytes) -> None:
        """The session's answer to `approval` (the first one given stands)."""
        with self._begin() as db:
            db.execute(
                APPROVALS.update()
                .where(APPROVALS.c.id == approval, APPROVALS.c.answer.is_(None))
                .values(answer=answer)
            )

    def check_format(self) -> None:
        """The database's format recorded if it has none; one newer than this
        orchestrator's refused with a `ConfigError` that says so."""
        query = sa.select(META.c.value).where(META.c.key == "format")
        with self._begin() as db:
            found = db.execute(query).scalar()
        if found is None:
            try:
                with self._begin() as db:
                    db.execute(META.insert().values(key="format", value=str(ENGINE_FORMAT)))
                return
            except IntegrityError:  # another process recorded it meanwhile
                with self._begin() as db:
                    found = db.execute(query).scalar()
        if found is not None and int(found) > ENGINE_FORMAT:
            raise ConfigError(
                f"the engine's database is of format {found}, written by a newer "
                f"orchestrator; this one ({ENGINE_FORMAT}) does not take its tasks: "
                "upgrade it to the sessions' version"
            )

    # Workers.

    def beat(self, worker_id: str, version: str, pid: int, *, stopped: bool = False) -> None:
        """`worker_id` is alive now (or has stopped, cleanly)."""
        now = now_ms()
        with self._begin() as db:
            changed = db.execute(
                WORKERS.update()
                .where(WORKERS.c.worker_id == worker_id)
                .values(beat_ms=now, stopped=stopped)
            ).rowcount
            if not changed:
                db.execute(
                    WORKERS.insert().values(
                        worker_id=worker_id,
                        host=socket.gethostname(),
                        pid=pid,
                        version=version,
                        beat_ms=now,
                        stopped=stopped,
                    )
                )

    def workers(self) -> list[Worker]:
        query = sa.select(
            WORKERS.c.worker_id,
            WORKERS.c.host,
            WORKERS.c.pid,
            WORKERS.c.version,
            WORKERS.c.beat_ms,
            WORKERS.c.stopped,
        ).order_by(WORKERS.c.worker_id)
        with self._begin() as db:
            return [Worker(*row) for row in db.execute(query)]

    def claim_silent(self, worker_id: str, silent_ms: int) -> bool:
        """Mark `worker_id`, silent `silent_ms` or more, as stopped; True for the one
        caller that did (the one that says so), once its workflows are queued again."""
        with self._begin() as db:
            changed = db.execute(
                WORKERS.update()
                .where(
                    WORKERS.c.worker_id == worker_id,
                    WORKERS.c.stopped.is_(False),
                    WORKERS.c.beat_ms <= now_ms() - silent_ms,
                )
                .values(stopped=True)
            ).rowcount
        return bool(changed)


def _make_tables(engine: sa.Engine) -> None:
    """The engine's tables, made if missing. Several processes may make them at once on a
    new database (a session and its workers): `checkfirst` looks, then creates, so one
    may find a table or an index made by another meanwhile ("already exists", or
    Postgres's duplicate type), and looks again. Each such failure means another made
    one of the objects, so there are at most as many as there are objects."""
    objects = sum(1 + len(table.indexes) for table in METADATA.sorted_tables)
    for attempt in range(objects + 1):
        try:
            METADATA.create_all(engine, checkfirst=True)
            return
        except (sa.exc.OperationalError, sa.exc.ProgrammingError, IntegrityError):
            if attempt == objects:
                raise
