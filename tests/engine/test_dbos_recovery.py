"""A session on the dbos engine (SQLite) SIGKILLed while its one delegated task works,
then resumed: DBOS's record of the task's workflow is re-entered by its id, the task
completes exactly once, no side effect runs twice, and `sessions verify` passes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator import load_state
from tests.crash.harness import cli

pytest.importorskip("dbos")

from tests.scenes import call

ROUNDS = 6
KILL_AT = 3  # the task's shell call of this round has started (durably) when it is killed


def script() -> dict[str, Any]:
    rounds = [
        {"tool_calls": [call("shell", command=f"sleep 0.2; echo round-{r} >> log.txt")]}
        for r in range(1, ROUNDS + 1)
    ]
    return {
        "version": 1,
        "agents": {
            "main": [
                {"tool_calls": [call("delegate", description="rounds", prompt="do the rounds")]},
                {"tool_calls": [call("wait_tasks")]},
                # Distinct answers for the turns a restart or a late completion gives it.
                *[{"text": f"The rounds are done ({n})."} for n in range(8)],
            ],
            "t1": [*rounds, {"tool_calls": [call("complete", summary="all rounds done")]}],
        },
    }


def run_until(command: list[str], log: Path, *, kill_at_round: int | None) -> int | None:
    """Run `command` (its stderr to `log`); SIGKILL it once the task's shell call of
    `kill_at_round` has started (None: let it finish). Its exit code, or None when
    killed."""
    with (
        log.open("ab") as errors,
        subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=errors,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "NO_COLOR": "1"},
        ) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:
            event = orjson.loads(line)
            started = event["kind"] == "tool_call_started" and event.get("agent") == "t1"
            if kill_at_round and started and f"round-{kill_at_round}" in line.decode():
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=60)
                return None
        code = proc.wait(timeout=120)
    assert code == 0, log.read_text()[-3000:]
    return code


def workflows(directory: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(directory / "engine" / "dbos.sqlite") as db:
        rows = db.execute(
            "select workflow_uuid, status, executor_id from workflow_status order by created_at"
        )
        return [tuple(row) for row in rows]


def test_a_killed_task_is_recovered_by_its_workflow_and_completes_once(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    path = tmp_path / "script.json"
    path.write_bytes(orjson.dumps(script()))
    flags = ["--yes", "--json", "--engine", "dbos"]
    log = tmp_path / "stderr.txt"
    run = cli(
        "run", "rounds", "-m", f"scripted:{path}", "--session-workspace", *flags, sessions=sessions
    )
    assert run_until(run, log, kill_at_round=KILL_AT) is None
    [directory] = sessions.iterdir()
    [(workflow_id, status, first_executor)] = workflows(directory)
    assert (workflow_id, status) == (f"{directory.name}/t1", "PENDING")

    assert (
        run_until(cli("resume", directory.name, *flags, sessions=sessions), log, kill_at_round=None)
        == 0
    )

    # The same workflow, ended by the second process: re-entered, not started anew.
    [(again, status, executor)] = workflows(directory)
    assert (again, status) == (workflow_id, "SUCCESS")
    assert executor != first_executor
    state = load_state(directory, warn=pytest.fail)
    assert state.status == "completed"
    task = state.tasks.get("t1")
    assert task is not None
    assert task.state == "completed"
    assert task.instances == ["t1.1", "t1.2"]  # its loop ran again in the second process
    records = [
        orjson.loads(line) for line in (directory / "journal.jsonl").read_bytes().splitlines()
    ]
    completed = [r for r in records if r["k"] == "task_changed" and r["state"] == "completed"]
    assert len(completed) == 1
    # Each round ran once at most; only the one cut off by the kill may be missing (it is
    # reported interrupted to the model, never run again).
    lines = (directory / "workspace" / "log.txt").read_text().splitlines()
    expected = [f"round-{r}" for r in range(1, ROUNDS + 1)]
    assert lines in (expected, [x for x in expected if x != f"round-{KILL_AT}"])
    verify = subprocess.run(
        cli("sessions", "verify", directory.name, sessions=sessions), capture_output=True, text=True
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
