"""`orchestrator engine status`: the dbos engine's workers and queued tasks, read from its
database (engine/status.py; docs/engine.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from orchestrator.config import Config
from orchestrator.engine.choice import require_dbos
from orchestrator.errors import ConfigError
from orchestrator.session.shown import duration
from orchestrator.text import label

if TYPE_CHECKING:
    from orchestrator.engine.status import EngineStatus


def engine_status(args: argparse.Namespace, config: Config) -> int:
    require_dbos()
    from sqlalchemy.exc import SQLAlchemyError

    from orchestrator.engine.status import engine_status
    from orchestrator.engine.urls import hide_password

    url = args.database_url or config.engine.database_url
    if not url:
        raise ConfigError(
            "engine status needs the engine's database: --database-url URL or [engine] "
            "database_url (the URL the sessions and workers use)"
        )
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        raise ConfigError(f"no engine database at {url.removeprefix('sqlite:///')}")
    try:
        status = engine_status(url)
    except SQLAlchemyError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        where = hide_password(url)
        raise ConfigError(f"cannot read the engine's database {where}: {first}") from None
    if args.json:
        sys.stdout.write(orjson.dumps(status.as_json()).decode() + "\n")
        return 0
    print(render(status, hide_password(url)))
    return 0


def render(status: EngineStatus, where: str) -> str:
    from orchestrator.engine.status import worker_state

    lines = [f"engine     {where}"]
    if not status.workers:
        lines.append("workers    none has served this database")
    else:
        lines += [
            "",
            "workers",
            "  WORKER                HOST          PID  VERSION   LAST BEAT  STATE",
        ]
        for w in status.workers:
            ago = duration((status.now_ms - w.beat_ms) / 1000)
            lines.append(
                f"  {label(w.worker_id, 20):<20}  {label(w.host, 12):<12}  {w.pid:>5}  "
                f"{label(w.version, 8):<8}  {ago + ' ago':>9}  {worker_state(w, status.now_ms)}"
            )
    sessions = status.by_session()
    if not sessions:
        lines.append("tasks      none queued or running")
        return "\n".join(lines)
    lines += ["", "tasks"]
    for session, tasks in sessions.items():
        queued = sum(t.state == "queued" for t in tasks)
        running = len(tasks) - queued
        lines.append(f"  {label(session, 40)}: {running} running, {queued} queued")
        for t in tasks:
            on = f" on {label(t.worker, 30)}" if t.worker else ""
            age = duration((status.now_ms - t.since_ms) / 1000)
            lines.append(f"    {label(t.task, 12):<12} {t.state}{on} for {age}")
    return "\n".join(lines)
