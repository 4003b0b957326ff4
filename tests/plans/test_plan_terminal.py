"""The plan's approval at a real terminal (a pseudo-terminal): the person approves or
rejects; a kill while the question waits decides nothing, and a resume asks again."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator import load_state
from tests.conftest import run_on_terminal, waiting_on_terminal
from tests.plans.test_handoff import PLAN_ARGS, SCRIPT


@pytest.fixture
def model(tmp_path: Path) -> str:
    path = tmp_path / "script.json"
    script: dict[str, Any] = {**SCRIPT, "agents": {**SCRIPT["agents"]}}
    submit = {"tool_calls": [{"name": "submit_plan", "arguments": PLAN_ARGS}]}
    script["agents"]["planner"] = [submit, submit]
    path.write_bytes(orjson.dumps(script))
    return f"scripted:{path}"


def the_session(sessions: Path) -> Path:
    [directory] = [p for p in sessions.iterdir() if p.is_dir()]
    return directory


def test_the_person_rejects_then_approves(tmp_path: Path, model: str) -> None:
    sessions, workspace = tmp_path / "sessions", tmp_path / "ws"
    workspace.mkdir()
    args = ["run", "write two files", "--plan", "--yes", "-m", model, "-w", str(workspace)]
    done = run_on_terminal([*args, "--sessions-dir", str(sessions)], b"r\nsplit it\na\n")
    assert done.returncode == 0, done.stderr
    assert "── plan v1 for approval ──" in done.stderr
    assert "  │ ### a. write a.txt" in done.stderr
    state = load_state(the_session(sessions), warn=pytest.fail)
    assert [(v.version, v.decision, v.by, v.feedback) for v in state.plans.versions] == [
        (1, "rejected", "person", "split it"),
        (2, "approved", "person", ""),
    ]
    assert (workspace / "b.txt").exists()


def test_a_kill_at_the_question_decides_nothing(tmp_path: Path, model: str) -> None:
    sessions, workspace = tmp_path / "sessions", tmp_path / "ws"
    workspace.mkdir()
    args = ["run", "write two files", "--plan", "--yes", "-m", model, "-w", str(workspace)]
    with waiting_on_terminal([*args, "--sessions-dir", str(sessions)], b"Approve plan v1?") as proc:
        proc.send_signal(signal.SIGKILL)  # as the question waits
        proc.wait(timeout=30)
    directory = the_session(sessions)
    state = load_state(directory, warn=lambda _: None)
    pending = state.plans.pending
    assert pending is not None
    assert pending.version == 1
    assert "main" not in state.agents
    resumed = subprocess.run(
        [sys.executable, "-m", "orchestrator", "resume", directory.name, "--yes", "--approve",
         "--sessions-dir", str(sessions)],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, check=False,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert load_state(directory, warn=pytest.fail).plans.versions[0].by == "--approve"
