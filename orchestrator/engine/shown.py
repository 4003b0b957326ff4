"""What `sessions show` reads of a session's tasks that ran on workers: their journals in
the engine's database (engine/store.py, `orchestrator_task_records`), handed to the report
as `WorkerRecords` (session/on_workers.py). It only reads: it makes no table and no SQLite
file, and a database it cannot read is a reason in the report, never an exception."""

from __future__ import annotations

from pathlib import Path

from orchestrator.engine.choice import EXTRA, hide_password
from orchestrator.session.on_workers import WorkerRecords


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
        return WorkerRecords(database=shown, unread=f"no database file {parsed.database}")
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
