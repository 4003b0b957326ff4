"""The engine a command runs delegated tasks on: `--engine`, else `[engine] kind`, else
`local`; for `dbos`, its database: `[engine] database_url`, else a SQLite file in the
session's directory (docs/engine.md)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import trio

from orchestrator.config import Config
from orchestrator.engine.choice import Engine, dbos_runner, require_dbos, sqlite_url
from orchestrator.team.port import Runner
from orchestrator.team.subagent import InProcessRunner

ENGINE_DB = Path("engine") / "dbos.sqlite"
"""The dbos engine's default database, inside the session's directory."""


def chosen_engine(args: argparse.Namespace, config: Config) -> Engine:
    """The engine of this command; for `dbos`, a `ConfigError` naming the extra when it
    is not installed (checked before a session is made)."""
    engine: Engine = getattr(args, "engine", None) or config.engine.kind
    if engine == "dbos":
        require_dbos()
    return engine


def runner_for(
    args: argparse.Namespace, config: Config, directory: Path
) -> Callable[[trio.Nursery], Runner]:
    """`RunSettings.runner` for the session in `directory`."""
    if chosen_engine(args, config) == "local":
        return InProcessRunner
    url = config.engine.database_url
    if url is None:
        (directory / ENGINE_DB.parent).mkdir(mode=0o700, exist_ok=True)
        (directory / ENGINE_DB).touch(mode=0o600)  # private, as every file of a session
        url = sqlite_url(directory / ENGINE_DB)
    return dbos_runner(url, patience=config.engine.patience)
