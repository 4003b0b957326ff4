"""DBOS in this process, for whichever part of the dbos engine runs here: a session's
runner (engine/dbos.py, engine/remote.py) or a worker (engine/worker.py). DBOS is one per
process, so one part holds it at a time; it is launched on the engine's database as an
executor of its own, and destroyed through the engine's patience (engine/retry.py).
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Callable

import trio
from dbos import DBOS, DBOSConfig

from orchestrator._version import __version__
from orchestrator.engine.retry import EngineUnreachable, Patience
from orchestrator.engine.urls import hide_password
from orchestrator.errors import ConfigError

SQLITE_POLL = 0.1  # seconds between DBOS's looks for notifications on SQLite (its default,
# 1 s, is how long its close may wait for the poller; the engine uses no notifications)

# What launched DBOS in this process: DBOS is one per process, whichever of the engine's
# parts launches it (a session's runner, either kind, or a worker).
_HOLDER: list[object] = []


def hold_dbos(holder: object) -> None:
    """DBOS taken for `holder`; a `ConfigError` when another part of this process has it."""
    if _HOLDER:
        raise ConfigError("the dbos engine runs one session (or one worker) at a time in a process")
    _HOLDER.append(holder)


def release_dbos(holder: object) -> None:
    if holder in _HOLDER:
        _HOLDER.remove(holder)


def executor_id() -> str:
    """A new DBOS executor's id, which names where tasks run: its host, its process, and
    a random part (a process is a new executor each time)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def launch_dbos(url: str, executor: str, *, max_threads: int | None = None) -> None:
    """DBOS on the database at `url`, as executor `executor`, launched; in a thread.
    Its version is the package's, not a hash of the code: a process of the same version
    finds the workflows another left, and workers take only their own version's tasks.
    Each process is an executor of its own, so DBOS's start-up recovery never takes
    another process's workflows."""
    config: DBOSConfig = {
        "name": "orchestrator",
        "system_database_url": url,
        "application_version": __version__,
        "executor_id": executor,
        "log_level": "WARNING",
        "console_log_level": "ERROR",  # its waits for the database: notices (retry.py)
    }
    if max_threads is not None:
        config["max_executor_threads"] = max_threads
    if url.startswith("sqlite"):
        config["notification_listener_polling_interval_sec"] = SQLITE_POLL
    DBOS(config=config)


async def launched(db: Patience, url: str, launch: Callable[[], None]) -> None:
    """`launch()` through `db` (waiting while the database cannot be reached); any other
    failure a `ConfigError` naming the database (its password hidden)."""
    try:
        await db.call(launch)
    except EngineUnreachable:
        raise
    except Exception as exc:
        raise ConfigError(
            f"the dbos engine could not start on {hide_password(url)}: {exc}"
        ) from exc


async def destroy(db: Patience, threads: trio.CapacityLimiter) -> None:
    """DBOS destroyed, through `db` (an engine's patience), or at once while its database
    cannot be reached (it needs no answer of the database: it lets go of it)."""
    if db.waiting:
        await trio.to_thread.run_sync(_destroy_unreachable, limiter=threads)
    else:
        await db.call(DBOS.destroy)


def _destroy_unreachable() -> None:
    """DBOS destroyed while its database cannot be reached: its threads still waiting for
    the database (DBOS's own retry loop, `dbos._sys_db.db_retry`) stop at their next attempt
    instead of never, so that the process can end (it joins them as it exits). DBOS 3.4
    has this switch (`retry_connection_errors`) but does not let its `DBOS` set it."""
    from dbos import _dbos

    system_database = getattr(_dbos._dbos_global_instance, "_sys_db_field", None)
    if system_database is not None:
        system_database._retry_connection_errors = False
    # Their last words (a workflow that could not record its end) are no news: the error
    # said it all. DBOS's next launch sets its log level again.
    logging.getLogger("dbos").setLevel(logging.CRITICAL)
    DBOS.destroy()
