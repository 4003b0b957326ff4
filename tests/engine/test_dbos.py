"""The dbos engine (issue 26): a session's delegated tasks as DBOS workflows, on SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")

from orchestrator.engine import dbos_runner, sqlite_url
from orchestrator.models.scripted import ScriptedModel, parse_script
from orchestrator.session.live import create_session, load_state, open_session
from orchestrator.state.events import ListSink
from orchestrator.team.drive import RunResult, RunSettings, drive
from orchestrator.tools import PermissionPolicy, approve_all, workspace_tools


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


SCRIPT: dict[str, Any] = {
    "agents": {
        "main": [
            {"tool_calls": [call("delegate", description="w", prompt="write a")]},
            {"tool_calls": [call("wait_tasks")]},
            {"text": "done"},
        ],
        "t1": [
            {"tool_calls": [call("write_file", path="a.txt", content="A")]},
            {"tool_calls": [call("complete", summary="wrote a")]},
        ],
    }
}


async def run_on_dbos(root: Path, session_id: str, url: str, script: dict[str, Any]) -> RunResult:
    settings = RunSettings(
        model=ScriptedModel(parse_script(script)),
        tools=workspace_tools(),
        ui=ListSink(),
        policy=PermissionPolicy(),
        approve=approve_all,
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
