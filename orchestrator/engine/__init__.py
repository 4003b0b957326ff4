"""Where a session's delegated tasks run durably: the engine setting. `local` is the
team's own runner (in this process, on trio; `team.InProcessRunner`); `dbos` makes each
delegated task a DBOS workflow (`dbos_runner`; the optional extra `orchestrator[dbos]`,
whose module, `engine/dbos.py`, is imported only when that engine is chosen).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator._face import lazy

if TYPE_CHECKING:
    from orchestrator.engine.choice import (
        ENGINES,
        dbos_runner,
        dbos_workers,
        require_dbos,
    )
    from orchestrator.engine.retry import EngineUnreachable
    from orchestrator.engine.urls import sqlite_url

_HOMES = {
    "ENGINES": "choice",
    "EngineUnreachable": "retry",
    "dbos_runner": "choice",
    "dbos_workers": "choice",
    "require_dbos": "choice",
    "sqlite_url": "urls",
}

__all__ = [
    "ENGINES",
    "EngineUnreachable",
    "dbos_runner",
    "dbos_workers",
    "require_dbos",
    "sqlite_url",
]

__getattr__, __dir__ = lazy(__name__, _HOMES)
