"""The engine a session runs delegated tasks on, journaled with its settings
(docs/engine.md). A new session's: `--engine`, else `[engine] kind`, else `local`; for
`dbos`, its database: `--database-url`, else `[engine] database_url`, else a SQLite file
in the session's directory. The journal keeps the URL with its password hidden, so a
resume takes the URL from the flag or the config when given, else from the journal (and
the password, when it had one, must then be given again)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from orchestrator.config import Config
from orchestrator.engine.choice import Engine, dbos_runner, dbos_workers, require_dbos
from orchestrator.engine.urls import has_password, hide_password, sqlite_url
from orchestrator.errors import ConfigError
from orchestrator.state.settings import SessionSettings
from orchestrator.team.port import Runner
from orchestrator.team.subagent import InProcessRunner

ENGINE_DB = Path("engine") / "dbos.sqlite"
"""The dbos engine's default database, inside the session's directory."""


def chosen_engine(args: argparse.Namespace, config: Config) -> Engine:
    """The engine of a new session; for `dbos`, a `ConfigError` naming the extra when it
    is not installed (checked before a session is made)."""
    engine: Engine = getattr(args, "engine", None) or config.engine.kind
    if engine == "dbos":
        require_dbos()
    return engine


def check_resumed_engine(args: argparse.Namespace) -> None:
    """A resume's `--engine dbos` without the extra installed: refused before anything
    runs. (Without `--engine` the journal's engine is checked when the session opens.)"""
    if getattr(args, "engine", None) == "dbos":
        require_dbos()


def _given_url(args: argparse.Namespace, config: Config) -> str | None:
    url: str | None = getattr(args, "database_url", None) or config.engine.database_url
    return url


def engine_settings(args: argparse.Namespace, config: Config) -> dict[str, Any]:
    """The engine settings of a new session (`SessionSettings.engine`, `engine_database`,
    `engine_workers`)."""
    engine = chosen_engine(args, config)
    url = _given_url(args, config) if engine == "dbos" else None
    workers = getattr(args, "workers", None)
    return {
        "engine": engine,
        "engine_database": hide_password(url) if url else "",
        "engine_workers": engine == "dbos"
        and (workers if workers is not None else config.engine.workers),
    }


def database_change(
    settings: SessionSettings, args: argparse.Namespace, config: Config
) -> dict[str, Any]:
    """The database a resume gives a session on dbos (`--database-url`, else `[engine]
    database_url`), as a settings change: it replaces the journaled one, and is
    journaled (its password hidden) when it differs from it."""
    url = _given_url(args, config) if settings.engine == "dbos" else None
    return {"engine_database": hide_password(url)} if url else {}


def session_database(settings: SessionSettings, args: argparse.Namespace, config: Config) -> str:
    """The database of a session on dbos: `--database-url`, else `[engine] database_url`,
    else the journaled one ("" for none: the SQLite file in the session). A journaled URL
    whose password was hidden needs it given again: a `ConfigError` naming the flag."""
    url = _given_url(args, config) or settings.engine_database
    if url and url == settings.engine_database and has_password(url):
        raise ConfigError(
            f"the session's engine database {url} needs its password, which is never "
            "journaled: give --database-url URL or [engine] database_url"
        )
    return url


def runner_for(
    settings: SessionSettings,
    args: argparse.Namespace,
    config: Config,
    directory: Path,
    *,
    model: str,
    workspace: Path,
    trace_parent: Callable[[str], str] | None = None,
) -> Callable[[trio.Nursery], Runner]:
    """`RunSettings.runner` for the session in `directory` running with `settings`: its
    engine, on the database given now (flag, config) or else the journaled one. A
    journaled URL whose password was hidden needs it given again: a `ConfigError`. On
    workers, the session's model spec and workspace go with each task, and a traced
    run's `trace_parent` of the call that delegated it."""
    if settings.engine == "local":
        return InProcessRunner
    require_dbos()
    url = session_database(settings, args, config)
    if settings.engine_workers:
        if not url:
            raise ConfigError(
                "tasks on workers need a database every worker reaches: --database-url URL "
                "or [engine] database_url"
            )
        patience = config.engine.patience
        return dbos_workers(
            url, model=model, workspace=workspace, patience=patience, trace_parent=trace_parent
        )
    if not url:
        (directory / ENGINE_DB.parent).mkdir(mode=0o700, exist_ok=True)
        (directory / ENGINE_DB).touch(mode=0o600)  # private, as every file of a session
        url = sqlite_url(directory / ENGINE_DB)
    return dbos_runner(url, patience=config.engine.patience)
