"""The engine is journaled with the session (issue 26): a resume without `--engine` runs
on the session's engine, `--engine` on a resume is an override journaled like the other
settings, a database URL's password never reaches the journal (and a resume that needs
it says so in one line), and each run of a task says where it ran, in the task record,
its view and `sessions show`, on both engines."""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator import load_state
from orchestrator.cli import main
from orchestrator.cli.parser import EXIT_USAGE

pytest.importorskip("dbos")

from tests.engine.test_dbos import SCRIPT
from tests.scenes import journaled_session


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCHESTRATOR_CONFIG_DIR", str(tmp_path / "no-config"))
    monkeypatch.delenv("ORCHESTRATOR_CONFIG", raising=False)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_bytes(orjson.dumps(SCRIPT))
    return path


def orchestrator(root: Path, *args: str) -> int:
    return main([*args, "--sessions-dir", str(root)])


def settings_records(directory: Path) -> list[dict[str, Any]]:
    lines = (directory / "journal.jsonl").read_bytes().splitlines()
    return [r for r in map(orjson.loads, lines) if r["k"] == "settings"]


def workflows(directory: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(directory / "engine" / "dbos.sqlite") as db:
        rows = db.execute("select workflow_uuid, status, executor_id from workflow_status")
        return [tuple(row) for row in rows]


def shown(root: Path, session_id: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert orchestrator(root, "sessions", "show", session_id) == 0
    return capsys.readouterr().out


def test_run_journals_the_engine(tmp_path: Path, script: Path) -> None:
    root = tmp_path / "sessions"
    flags = ["--yes", "--json", "-m", f"scripted:{script}", "--session-workspace"]
    assert orchestrator(root, "run", "write a", *flags, "--engine", "dbos") == 0
    [directory] = root.iterdir()
    [made] = settings_records(directory)  # the session's first record
    assert made["settings"]["engine"] == "dbos"
    assert made["settings"]["engine_database"] == ""  # the SQLite file in the session
    [(workflow, status, _)] = workflows(directory)
    assert (workflow, status) == (f"{directory.name}/t1", "SUCCESS")


def test_a_resume_without_engine_runs_on_the_journaled_one(
    tmp_path: Path, script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "sessions"
    session_id = journaled_session(root, script, "write a", engine="dbos")
    directory = root / session_id
    assert orchestrator(root, "resume", session_id, "--yes", "--json") == 0
    state = load_state(directory, warn=pytest.fail)
    assert state.status == "completed"
    assert len(settings_records(directory)) == 1  # nothing overridden
    [(workflow, status, executor)] = workflows(directory)
    assert (workflow, status) == (f"{session_id}/t1", "SUCCESS")
    # ... and the task says where it ran: this process, as that DBOS executor.
    task = state.tasks.get("t1")
    assert task is not None
    assert task.ran_on is not None
    assert (task.ran_on.host, task.ran_on.pid) == (socket.gethostname(), os.getpid())
    assert task.ran_on.worker == executor
    assert orjson.loads((directory / "tasks" / "t1.json").read_bytes())["ran_on"] == {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "worker": executor,
    }
    text = shown(root, session_id, capsys)
    assert "engine     dbos on the SQLite file engine/dbos.sqlite in the session\n" in text
    [row] = [line for line in text.splitlines() if line.startswith("  └─ t1")]
    assert f" {executor} " in row  # the executor id names host and process already
    assert "WHERE" in text


def test_a_local_task_says_its_host_and_process(
    tmp_path: Path, script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "sessions"
    session_id = journaled_session(root, script, "write a")
    assert orchestrator(root, "resume", session_id, "--yes", "--json") == 0
    directory = root / session_id
    view = orjson.loads((directory / "tasks" / "t1.json").read_bytes())
    assert view["ran_on"] == {"host": socket.gethostname(), "pid": os.getpid()}  # no worker
    text = shown(root, session_id, capsys)
    assert "engine     local (in the session's process)\n" in text
    [row] = [line for line in text.splitlines() if line.startswith("  └─ t1")]
    assert f" {socket.gethostname()}:{os.getpid()} " in row
    assert not (directory / "engine").exists()  # nothing of dbos


def test_engine_on_a_resume_is_an_override_journaled_for_the_next(
    tmp_path: Path, script: Path
) -> None:
    root = tmp_path / "sessions"
    session_id = journaled_session(root, script, "write a")  # local
    directory = root / session_id
    assert orchestrator(root, "resume", session_id, "--yes", "--json", "--engine", "dbos") == 0
    made, override = settings_records(directory)
    assert (made["source"], made["settings"]["engine"]) == ("run", "local")
    assert (override["source"], override["settings"]["engine"]) == ("override", "dbos")
    assert override["settings"] == {**made["settings"], "engine": "dbos"}
    [(_, status, executor)] = workflows(directory)
    assert status == "SUCCESS"
    task = load_state(directory, warn=pytest.fail).tasks.get("t1")
    assert task is not None
    assert task.ran_on is not None
    assert task.ran_on.worker == executor


def test_a_journaled_password_must_be_given_again(
    tmp_path: Path, script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "sessions"
    hidden = "postgresql://me:***@db.invalid/orch"
    session_id = journaled_session(root, script, "write a", engine="dbos", engine_database=hidden)
    capsys.readouterr()
    assert orchestrator(root, "resume", session_id, "--yes", "--json") == EXIT_USAGE
    said = [s for s in capsys.readouterr().err.splitlines() if not s.startswith("note: shell")]
    assert said[0].startswith(f"resuming session {session_id} ")
    assert said[1:] == [
        f"error: the session's engine database {hidden} needs its password, which is never "
        "journaled: give --database-url URL or [engine] database_url"
    ]
    state = load_state(root / session_id, warn=pytest.fail)
    assert state.status == "running"  # (made, never run: nothing was journaled)
    assert len(settings_records(root / session_id)) == 1


def test_a_password_never_reaches_the_journal(
    tmp_path: Path, script: Path, postgres_url: str
) -> None:
    root = tmp_path / "sessions"
    # The server trusts loopback: the password is taken and not needed.
    url = postgres_url.replace("postgres@", "postgres:s3cret@").rsplit("/", 1)[0] + "/journaled"
    hidden = url.replace(":s3cret@", ":***@")
    flags = ["--yes", "--json", "-m", f"scripted:{script}", "--session-workspace"]
    run = ["run", "write a", *flags, "--engine", "dbos", "--database-url", url]
    assert orchestrator(root, *run) == 0
    [directory] = root.iterdir()
    [made] = settings_records(directory)
    assert made["settings"]["engine_database"] == hidden
    for path in directory.rglob("*"):  # journal, snapshot, views, manifest: none has it
        assert not path.is_file() or b"s3cret" not in path.read_bytes(), path
    # A resume given the URL again runs, and the same URL (its password hidden) is no
    # override.
    session_id = journaled_session(root, script, "write a", engine="dbos", engine_database=hidden)
    resume = ["resume", session_id, "--yes", "--json", "--database-url", url]
    assert orchestrator(root, *resume) == 0
    assert len(settings_records(root / session_id)) == 1
    assert load_state(root / session_id, warn=pytest.fail).status == "completed"
