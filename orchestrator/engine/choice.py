"""Choosing the engine: the names, the check that the `dbos` extra is installed (one
line naming it when it is not), and the factories of the runners, which import
`engine/dbos.py` or `engine/remote.py` (and DBOS) only when called. A database URL as
the journal keeps it is urls.py's."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from orchestrator.errors import ConfigError

if TYPE_CHECKING:
    import trio

    from orchestrator.team.port import Runner

Engine = Literal["local", "dbos"]
ENGINES: tuple[Engine, ...] = ("local", "dbos")
EXTRA = "pip install 'orchestrator[dbos]'"


def require_dbos() -> None:
    """Nothing when DBOS can be imported, else a `ConfigError` naming the extra."""
    try:
        import dbos  # noqa: F401
    except ImportError:
        raise ConfigError(f"the dbos engine needs the dbos extra: {EXTRA}") from None


def dbos_runner(
    url: str, *, max_threads: int = 64, patience: float = 600.0
) -> Callable[[trio.Nursery], Runner]:
    """`RunSettings.runner` for the dbos engine: each delegated task a DBOS workflow in
    the database at `url` (`sqlite:///PATH`, or `postgresql://...`), at most
    `max_threads` of them running at once in DBOS's threads; the database waited for up
    to `patience` seconds when it cannot be reached (docs/engine.md)."""
    require_dbos()
    from orchestrator.engine.dbos import DbosRunner

    return functools.partial(DbosRunner, url=url, max_threads=max_threads, patience=patience)


def dbos_workers(
    url: str,
    *,
    model: str,
    workspace: Path,
    patience: float = 600.0,
    trace_parent: Callable[[str], str] | None = None,
) -> Callable[[trio.Nursery], Runner]:
    """`RunSettings.runner` for the dbos engine with its tasks on workers (`orchestrator
    worker` processes on the database at `url`): `model` is the session's model spec,
    which each worker resolves with its own keys, and `workspace` a path every worker
    reaches; `patience`, the seconds an outage of the database is waited for
    (docs/engine.md); `trace_parent`, a traced session's `traceparent` of a call, which
    each task's workflow carries (that of the call that delegated it; docs/tracing.md)."""
    require_dbos()
    from orchestrator.engine.remote import RemoteRunner

    return functools.partial(
        RemoteRunner,
        url=url,
        model=model,
        workspace=str(workspace),
        patience=patience,
        trace_parent=trace_parent,
    )
