"""SIGKILL a session while a call runs in the background (issue 25), resume it, and check
that the call's end reaches its owner exactly once and that nothing runs it again.

The main agent starts a build in the background (`shell`, `background: true`) that
prints its first line, then waits for a file the agent writes three steps later, then
prints its last; meanwhile the agent writes files and reads the workspace, then waits for
the build with `wait_tasks`. The session runs with the real CLI in a subprocess and is
killed after a seeded random number of its events, resumed, maybe killed again, until it
completes; so kills fall before the build's task is durable, while it runs, between its
end and the message that tells it, and after.

Then: the build's end was told to the main agent once (one message from the task, the
one its context holds: `completed`, or `risk_alert` saying `interrupted`; never both,
never none), its task settled once, its output holds its first line at most once (once,
if it ever ran), no process of the session is left running, and `sessions verify`
finds nothing wrong. The agent's call always gets its handle: a resume gives it to a call
cut off after its task was made, and starts one cut off before (`Shell.recover`).

The instants a random kill rarely hits are also cut out of a finished run's journal and
resumed: right after the task's record, after it started running, after it ended but
before its message, and after the message but before the agent read it.

Every `pytest` makes 6 kills, `pytest -m slow` 20; `CRASH_BACKGROUND_KILLS` sets the
number of kills, `CRASH_SEED` the seed.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator import ToolResult
from orchestrator.tools.shell import marked
from tests.crash.harness import sized
from tests.crash.test_crash_team import TeamCrashRun, m_text, rewind
from tests.scenes import call

FIRST = "build started"
BUILD = f"echo {FIRST}; until [ -f go ]; do sleep 0.02; done; echo build finished"


def script() -> dict[str, Any]:
    main = [
        {"text": "Building in the background.", "tool_calls": [
            call("shell", command=BUILD, background=True)]},
        {"tool_calls": [call("write_file", path="notes.txt", content="while it builds\n")]},
        {"tool_calls": [call("list_files"), call("read_file", path="notes.txt")]},
        {"tool_calls": [call("write_file", path="go", content="now\n")]},
        {"tool_calls": [call("wait_tasks", tasks=["t1"], timeout=60)]},
        # (More answers than one: a resume may give the agent the build's end as mail
        # after its turn ended.)
        *[{"text": f"The build is over ({n})."} for n in range(10)],
    ]  # fmt: skip
    return {"version": 1, "agents": {"main": main}}


@pytest.fixture(scope="module")
def script_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("background-script") / "script.json"
    path.write_bytes(orjson.dumps(script()))
    return path


def check_told_once(run: TeamCrashRun) -> str:
    """What the session's end says of the build: `completed`, or `interrupted` (its task
    was durable, its process cut off). Asserts exactly-once on the way."""
    state = run.final_state()
    assert state.status == "completed"
    journal = run.journal()
    main = state.agents["main"]
    heard = "\n".join(m_text(m) for m in main.messages)
    [shell] = [
        m for m in main.messages if isinstance(m, ToolResult) and m.call_id == "call_main_0_0"
    ]
    assert shell.status == "ok", shell
    assert "started in the background as task t1" in shell.content
    task = state.tasks.get("t1")
    assert task is not None
    assert task.kind == "tool"
    settled = [
        r["state"]
        for r in journal
        if r["k"] == "task_changed" and r["task"] == "t1" and r["state"] != "running"
    ]
    assert settled == [task.state], settled  # settled once, never run again
    told = [
        (r["mail"], r["summary"])
        for r in journal
        if r["k"] == "message_posted" and r["a"] == "t1" and r["mail"] != "progress"
    ]
    assert len(told) == 1, told
    [(kind, summary)] = told
    assert heard.count("background call t1 (") == 1, heard
    assert summary.split("\n", 1)[0] in heard  # the one message is the one it read
    # (No file when the kill came between the task's record and its process.)
    path = run.directory / task.output
    output = path.read_text() if path.is_file() else ""
    assert output.splitlines().count(FIRST) <= 1, output
    if task.state == "completed":
        assert kind == "completed"
        assert output.splitlines() == [FIRST, "build finished"]
        return "completed"
    assert (task.state, kind) == ("cancelled", "risk_alert"), (task.state, task.reason)
    assert task.reason.startswith("interrupted: "), task.reason
    return "interrupted"


def verify(run: TeamCrashRun) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator", "sessions", "verify", run.session_id,
         "--sessions-dir", str(run.sessions)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_uninterrupted_run_hears_of_its_build_once(tmp_path: Path, script_path: Path) -> None:
    run = TeamCrashRun(tmp_path / "sessions", script_path, tmp_path, random.Random(0))
    assert run.step(kill_after_events=None) == 0
    assert check_told_once(run) == "completed"
    assert (run.workspace / "notes.txt").exists()
    verify(run)


@pytest.mark.parametrize("kills", sized("CRASH_BACKGROUND_KILLS", 6, 20))
def test_background_call_sigkill_at_random_points_then_resume(
    tmp_path: Path, script_path: Path, kills: int
) -> None:
    rng = random.Random(int(os.environ.get("CRASH_SEED", "20261127")))
    outcomes: dict[str, int] = {}
    done = sessions = 0
    while done < kills:
        sessions += 1
        run = TeamCrashRun(
            tmp_path / f"sessions-{sessions}", script_path, tmp_path / f"s{sessions}", rng
        )
        while run.step(kill_after_events=rng.randint(1, 45)) is None:
            done += 1
            run.check_invariants()
        outcome = check_told_once(run)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        assert marked(f"{run.session_id}/") == []  # nothing of the session still runs
        verify(run)
    print(f"{done} kills in {sessions} sessions; the build: {outcomes}")


def _record(kind: str, **fields: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r["k"] == kind and all(r.get(k) == v for k, v in fields.items())


@pytest.mark.parametrize(
    ("cut_after", "output", "outcome"),
    [
        (_record("task_created", task="t1"), None, "interrupted"),
        (_record("task_changed", task="t1", state="running"), f"{FIRST}\n", "interrupted"),
        (_record("task_changed", task="t1", state="completed"), "whole", "completed"),
        (_record("message_posted", a="t1"), "whole", "completed"),
    ],
    ids=["created", "running", "ended-untold", "told-unread"],
)
def test_killed_at_each_instant_of_the_call_it_is_told_once(
    tmp_path: Path,
    script_path: Path,
    cut_after: Callable[[dict[str, Any]], bool],
    output: str | None,
    outcome: str,
) -> None:
    run = TeamCrashRun(tmp_path / "sessions", script_path, tmp_path, random.Random(0))
    assert run.step(kill_after_events=None) == 0
    rewind(run.directory, cut_after)
    # The output file as it stood at that instant (none before the process started).
    path = run.directory / "tasks" / "t1.output"
    if output is None:
        path.unlink()
    elif output != "whole":
        path.write_text(output)
    assert run.step(kill_after_events=None) == 0
    assert check_told_once(run) == outcome
    assert marked(f"{run.session_id}/") == []
    verify(run)
