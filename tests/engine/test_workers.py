"""Delegated tasks on workers (issue 26): a session on the dbos engine puts its tasks on
the engine's queue, `orchestrator worker` processes take and run them, and what the tasks
do comes back to the session as mail and task states."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.importorskip("dbos")

from orchestrator.engine import dbos_workers, sqlite_url
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
            {
                "tool_calls": [
                    call("delegate", description="a", prompt="write a", write_scope=["a.txt"]),
                    call("delegate", description="b", prompt="write b", write_scope=["b.txt"]),
                ]
            },
            {"tool_calls": [call("wait_tasks")]},
            {"tool_calls": [call("wait_tasks")]},
            *[{"text": f"done ({n})"} for n in range(4)],
        ],
        "t1": [
            {"tool_calls": [call("write_file", path="a.txt", content="A")]},
            {"tool_calls": [call("complete", summary="wrote a")]},
        ],
        "t2": [
            {"tool_calls": [call("write_file", path="b.txt", content="B")]},
            {"tool_calls": [call("complete", summary="wrote b")]},
        ],
    }
}


@contextmanager
def worker(url: str, tmp: Path, name: str = "worker") -> Iterator[subprocess.Popen[bytes]]:
    """`orchestrator worker` on `url`, stopped (Ctrl+C) at the block's end."""
    config = tmp / "worker.toml"
    config.write_text("")
    log = (tmp / f"{name}.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "worker",
            "--database-url",
            url,
            "--config",
            str(config),
            "--beat",
            "0.5",
            "--silent",
            "3",
            "--yes",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()


async def run_on_workers(
    root: Path, session_id: str, url: str, script_file: Path, workspace: Path
) -> RunResult:
    settings = RunSettings(
        model=ScriptedModel(parse_script(SCRIPT)),
        tools=workspace_tools(),
        ui=ListSink(),
        policy=PermissionPolicy(),
        approve=approve_all,
        runner=dbos_workers(url, model=f"scripted:{script_file}", workspace=workspace),
    )
    async with open_session(root, session_id, warn=lambda _: None) as live:
        return await drive(live, settings)


async def test_tasks_run_on_a_worker_and_report_back(tmp_path: Path) -> None:
    root, workspace = tmp_path / "sessions", tmp_path / "ws"
    workspace.mkdir()
    script_file = tmp_path / "script.json"
    script_file.write_bytes(orjson.dumps(SCRIPT))
    session_id, directory = create_session(
        root, goal="g", model=f"scripted:{script_file}", workspace=workspace
    )
    url = sqlite_url(tmp_path / "engine.sqlite")
    with worker(url, tmp_path):
        result = await run_on_workers(root, session_id, url, script_file, workspace)
    log = (tmp_path / "worker.log").read_text()
    assert result.status == "completed", (result, log)
    assert (workspace / "a.txt").read_text() == "A"
    assert (workspace / "b.txt").read_text() == "B"
    state = load_state(directory, warn=pytest.fail)
    assert {t.task_id: t.state for t in state.tasks.tasks.values()} == {
        "t1": "completed",
        "t2": "completed",
    }
    completions = (
        [m for m in state.mailbox.history() if m.kind == "completed"]
        if hasattr(state.mailbox, "history")
        else []
    )
    del completions
