"""What `sessions show` reads of a session's tasks that ran on workers: their journals in
the engine's database (engine/store.py, `orchestrator_task_records`), handed to the report
as `WorkerRecords` (session/on_workers.py). It only reads: it makes no table and no SQLite
file, and a database it cannot read is a reason in the report, never an exception."""

from __future__ import annotations

from pathlib import Path

from orchestrator.engine.choice import EXTRA
from orchestrator.engine.urls import hide_password
from orchestrator.errors import OrchestratorError
from orchestrator.session.on_workers import WorkerRecords

NO_FILE = "no database file"


def read_worker_records(url: str, session_id: str) -> WorkerRecords:
    """The journals of `session_id`'s tasks on workers in the database at `url` (blocking:
    one query, waiting at most `store.READER_WAIT` seconds for a connection)."""
    shown = hide_password(url)
    try:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import SQLAlchemyError

        from orchestrator.engine.store import Store
    except ImportError:
        return WorkerRecords(database=shown, unread=f"the dbos extra is not installed: {EXTRA}")
    try:
        parsed = make_url(url)
    except (SQLAlchemyError, ValueError) as exc:
        return WorkerRecords(database=shown, unread=f"not a database URL: {exc}")
    sqlite = parsed.get_backend_name() == "sqlite"
    if sqlite and not Path(parsed.database or "").is_file():  # (connecting makes one)
        return WorkerRecords(database=shown, unread=f"{NO_FILE} {parsed.database}")
    try:
        store = Store(url, reader=True)
        try:
            by_key = store.session_records(session_id)
        finally:
            store.close()
    except (SQLAlchemyError, ImportError) as exc:  # (ImportError: the URL's driver)
        return WorkerRecords(database=shown, unread=_cannot_read(exc, parsed.password))
    prefix = f"{session_id}/"
    journals = {key.removeprefix(prefix): rows for key, rows in by_key.items()}
    return WorkerRecords(journals=journals, database=shown)


def _cannot_read(error: BaseException, password: object) -> str:
    from orchestrator.engine.retry import first_line

    line = first_line(error)
    if isinstance(password, str) and password:
        line = line.replace(password, "***")
    return f"it cannot be read ({line})"


class WorkerJournals:
    """The journals of a session's tasks on workers, read as they grow, for `sessions
    watch`: each `new()` gives the records written since the last (all of them the first
    time), as (task id, seq, framed line), in each task's order. Only reads, as
    `read_worker_records` does; blocking: call it in a thread. A database it cannot read
    is `WorkersUnread`, with the reason; a SQLite file not there yet is nothing yet when
    `patient` (a running session's first task makes it)."""

    def __init__(self, url: str, session_id: str, *, patient: bool = False) -> None:
        from orchestrator.engine.store import Store

        self.database = hide_password(url)
        self._url = url
        self._session = session_id
        self._patient = patient
        self._store: Store | None = None
        self._seen: dict[str, int] = {}  # task key -> its last seq read

    def new(self) -> list[tuple[str, int, bytes]]:
        from sqlalchemy.exc import SQLAlchemyError

        from orchestrator.engine.store import Store

        try:
            if not self._seen:  # nothing yet: the whole read, which makes nothing
                found = read_worker_records(self._url, self._session)
                if found.unread.startswith(NO_FILE) and self._patient:
                    return []
                if found.unread:
                    raise WorkersUnread(found.unread)
                prefix = f"{self._session}/"
                rows = [(prefix + task, rows) for task, rows in found.journals.items()]
            else:
                if self._store is None:
                    self._store = Store(self._url, reader=True)
                rows = list(self._store.session_tail(self._session, self._seen).items())
        except (SQLAlchemyError, ImportError) as exc:
            raise WorkersUnread(_cannot_read(exc, None)) from exc
        new: list[tuple[str, int, bytes]] = []
        for key, journal in rows:
            if journal:
                self._seen[key] = journal[-1][0]
            task_id = key.rsplit("/", 1)[1]
            new += [(task_id, seq, line) for seq, line in journal]
        return new

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


class WorkersUnread(OrchestratorError):
    """The engine's database could not be read (the reason is the message): said by
    `sessions watch`, which goes on without it."""
