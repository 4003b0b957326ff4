"""Choosing the engine from the command line: `local` stays the default; `dbos` without
its extra installed is a one-line usage error naming the extra, before a session exists."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator import SessionSettings
from orchestrator.cli.engine import runner_for
from orchestrator.cli.parser import EXIT_USAGE, build_parser
from orchestrator.config import parse_config
from orchestrator.engine.urls import has_password, hide_password
from orchestrator.errors import ConfigError

# The command line in a fresh interpreter where `import dbos` fails, as without the extra.
WITHOUT_DBOS = (
    "import sys; sys.modules['dbos'] = None; "
    "from orchestrator.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


def test_local_is_the_default() -> None:
    args = build_parser().parse_args(["run", "g", "-m", "scripted:x"])
    assert args.engine is None
    assert parse_config("").engine.kind == "local"
    config = parse_config('[engine]\nkind = "dbos"\ndatabase_url = "postgresql://h/db"\n')
    assert (config.engine.kind, config.engine.database_url) == ("dbos", "postgresql://h/db")
    assert config.engine.patience == 600  # seconds the database is waited for


def test_the_patience_is_a_positive_number_given_to_the_runner(tmp_path: Path) -> None:
    pytest.importorskip("dbos")
    args = build_parser().parse_args(["run", "g", "-m", "scripted:x", "--engine", "dbos"])
    config = parse_config("[engine]\npatience = 30\n")
    settings = SessionSettings(engine="dbos")
    runner = runner_for(settings, args, config, tmp_path, model="scripted:x", workspace=tmp_path)
    assert isinstance(runner, functools.partial)
    assert runner.keywords["patience"] == 30
    with pytest.raises(ConfigError, match="patience"):
        parse_config("[engine]\npatience = 0\n")


def test_dbos_without_the_extra_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    script = tmp_path / "script.json"
    script.write_text('{"agents": {"main": [{"text": "hi"}]}}')
    command = [sys.executable, "-c", WITHOUT_DBOS, "run", "g", "-m", f"scripted:{script}"]
    command += ["-w", str(tmp_path), "--engine", "dbos", "--sessions-dir", str(sessions)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT_USAGE
    assert done.stderr == (
        "error: the dbos engine needs the dbos extra: pip install 'orchestrator[dbos]'\n"
    )
    assert not sessions.exists() or not list(sessions.iterdir())  # no session was made


@pytest.mark.parametrize(
    ("url", "journaled"),
    [
        ("postgresql://me:s3cr%40t@db:5432/orch", "postgresql://me:***@db:5432/orch"),
        ("postgresql+psycopg://:pw@db/orch", "postgresql+psycopg://:***@db/orch"),
        (
            "postgresql://db/orch?sslmode=require&password=pw",
            "postgresql://db/orch?sslmode=require&password=***",
        ),
        ("postgresql://me@db/orch", "postgresql://me@db/orch"),
        ("sqlite:////tmp/x/dbos.sqlite", "sqlite:////tmp/x/dbos.sqlite"),
    ],
)
def test_the_journal_keeps_a_url_without_its_password(url: str, journaled: str) -> None:
    assert hide_password(url) == journaled
    assert has_password(url) == has_password(journaled) == ("***" in journaled)
    assert hide_password(journaled) == journaled
