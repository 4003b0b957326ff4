"""The dbos engine (issue 26): a session's delegated tasks as DBOS workflows, on SQLite."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import trio

pytest.importorskip("dbos")

if TYPE_CHECKING:
    from dbos import DBOSConfig

from orchestrator import RunResult, ScriptedModel, create_session, drive, load_state, open_session
from orchestrator.engine import dbos_runner, sqlite_url
from orchestrator.errors import OrchestratorError
from orchestrator.models.scripted import parse_script
from tests.engine.sessions import delegates_once
from tests.scenes import call, run_settings

SCRIPT = delegates_once(
    "write a",
    [
        {"tool_calls": [call("write_file", path="a.txt", content="A")]},
        {"tool_calls": [call("complete", summary="wrote a")]},
    ],
)


async def run_on_dbos(root: Path, session_id: str, url: str, script: dict[str, Any]) -> RunResult:
    settings = run_settings(
        ScriptedModel(parse_script(script)),
        runner=dbos_runner(url),
    )
    async with open_session(root, session_id, warn=lambda _: None) as live:
        return await drive(live, settings)


async def test_a_delegated_task_runs_as_a_workflow(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="g", model="x:y", workspace=None)
    url = sqlite_url(tmp_path / "engine.sqlite")
    result = await run_on_dbos(root, session_id, url, SCRIPT)
    assert result.status == "completed", result
    state = load_state(directory, warn=pytest.fail)
    assert state.tasks.get("t1").state == "completed"


async def test_a_delegated_task_runs_as_a_workflow_on_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    import psycopg

    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="g", model="x:y", workspace=None)
    url = postgres_url.rsplit("/", 1)[0] + "/orchestrator_engine"  # DBOS makes it
    result = await run_on_dbos(root, session_id, url, SCRIPT)
    assert result.status == "completed", result
    assert load_state(directory, warn=pytest.fail).tasks.get("t1").state == "completed"
    with psycopg.connect(url) as db:
        rows = db.execute("select workflow_uuid, status from dbos.workflow_status").fetchall()
    assert rows == [(f"{session_id}/t1", "SUCCESS")]


def workflows(url: str) -> dict[str, str]:
    """The workflows in a SQLite engine database: id to status."""
    with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
        return dict(db.execute("select workflow_uuid, status from workflow_status"))


async def test_a_revived_task_runs_as_its_next_workflow(tmp_path: Path) -> None:
    """A task that completed and is sent an instruction runs again as `<task>/2`, once
    its first workflow's end is recorded (its end no longer waits for that record)."""
    script: dict[str, Any] = {
        "agents": {
            "main": [
                {"tool_calls": [call("delegate", description="w", prompt="write a")]},
                {"tool_calls": [call("wait_tasks")]},
                {"tool_calls": [call("send_message", task="t1", text="write b too")]},
                {"tool_calls": [call("wait_tasks")]},
                {"text": "done"},
            ],
            "t1": [
                {"tool_calls": [call("complete", summary="wrote a")]},
                {"tool_calls": [call("complete", summary="wrote b")]},
            ],
        }
    }
    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="g", model="x:y", workspace=None)
    url = sqlite_url(tmp_path / "engine.sqlite")
    result = await run_on_dbos(root, session_id, url, script)
    assert result.status == "completed", result
    task = load_state(directory, warn=pytest.fail).tasks.get("t1")
    assert (task.state, len(task.instances)) == ("completed", 2)
    first = f"{session_id}/t1"
    assert workflows(url) == {first: "SUCCESS", f"{first}/2": "SUCCESS"}


async def test_a_task_whose_first_workflow_is_recorded_runs_as_its_next(tmp_path: Path) -> None:
    """A task the journal says never ran is started as its first workflow without a look
    at the database; when the database has that workflow already (here, one that failed
    before any session ran it), DBOS starts nothing, and the task runs as `<task>/2`."""
    from dbos import DBOS, SetWorkflowID

    from orchestrator._version import __version__
    from orchestrator.engine.dbos import _task_workflow

    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="g", model="x:y", workspace=None)
    url = sqlite_url(tmp_path / "engine.sqlite")
    first = f"{session_id}/t1"

    def record() -> None:
        config: DBOSConfig = {
            "name": "orchestrator",
            "system_database_url": url,
            "application_version": __version__,
            "console_log_level": "CRITICAL",
        }
        DBOS(config=config)
        DBOS.launch()
        try:
            with SetWorkflowID(first):
                handle = DBOS.start_workflow(_task_workflow, session_id, "t1")
            with pytest.raises(OrchestratorError, match="does not run in this process"):
                handle.get_result()
        finally:
            DBOS.destroy()

    await trio.to_thread.run_sync(record)
    result = await run_on_dbos(root, session_id, url, SCRIPT)
    assert result.status == "completed", result
    task = load_state(directory, warn=pytest.fail).tasks.get("t1")
    assert (task.state, len(task.instances)) == ("completed", 1)
    assert workflows(url) == {first: "ERROR", f"{first}/2": "SUCCESS"}
