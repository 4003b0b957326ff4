"""The engines a team test's session runs on (issue 26): `local`, the team's own runner,
and `dbos`, each delegated task a DBOS workflow in a SQLite file of the test's own. The
`engine` fixture (conftest.py) gives one of each to the tests that ask for it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from orchestrator import InProcessRunner, Runner
from orchestrator.engine import dbos_runner, require_dbos, sqlite_url
from orchestrator.engine.choice import Engine as EngineName
from orchestrator.errors import ConfigError


@dataclass(frozen=True)
class Engine:
    """Where a test session's delegated tasks run: `runner` is `RunSettings.runner`
    (`open_team`'s `runner`)."""

    name: EngineName
    runner: Callable[[trio.Nursery], Runner]
    database: Path | None = None  # dbos's SQLite file

    def workflows(self) -> list[tuple[str, str]]:
        """The workflows DBOS recorded, (id, status) in the order they started: none on
        `local`, nor before a task started."""
        if self.database is None or not self.database.exists():
            return []
        with closing(sqlite3.connect(self.database)) as db:
            query = "select workflow_uuid, status from workflow_status order by created_at"
            return db.execute(query).fetchall()


LOCAL = Engine("local", InProcessRunner)


def engine_named(name: EngineName, directory: Path) -> Engine:
    """The engine `name`; on dbos, its database a SQLite file in `directory`. Without the
    dbos extra, the test is skipped, saying so."""
    if name == "local":
        return LOCAL
    try:
        require_dbos()
    except ConfigError as exc:
        pytest.skip(str(exc))
    database = directory / "engine.sqlite"
    return Engine("dbos", dbos_runner(sqlite_url(database)), database)
