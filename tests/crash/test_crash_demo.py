"""SIGKILL the demo's whole process group at seeded random instants, continue each with
`orchestrator resume ID --yes --approve`, and check it ends as an uninterrupted demo does:
the same files with the same contents, the same verification outcome, and the plan, the
builder's todo list and the task tree in agreement. The demo plans first, so the kills
fall on plan points too: while the planner works, before and after the approval, during
the re-plan; a kill before an approval leaves it undecided, and the resume's `--approve`
decides it (a resume without it stops blocked: tests/plans/test_plan_cli.py).

The demo sets its own verification command and round limit; they are journaled with
the session as it is made, so the plain `resume` of a person who finds it killed runs
them too (issue 18: before, it ended "completed" without verifying).

Every `pytest` makes 4 kills, one per demo run, `pytest -m slow` 20; `CRASH_DEMO_KILLS`
sets the number of either.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator import load_state
from orchestrator.loop.plan_run import todo_status
from orchestrator.session.live import JOURNAL
from orchestrator.store import scan_journal
from tests.crash.harness import sized
from tests.workspaces import workspace_files

TIMEOUT = 120


def command(*args: str, sessions: Path) -> list[str]:
    return [sys.executable, "-m", "orchestrator", *args, "--sessions-dir", str(sessions)]


def demo(workspace: Path, sessions: Path, *, kill_after: int | None) -> list[dict[str, Any]]:
    """Run the demo (without its own staged crash) in a process group of its own; with
    `kill_after`, SIGKILL the group after that many event lines. Returns the events."""
    proc = subprocess.Popen(
        command("demo", "--no-crash", "--json", "-w", str(workspace), sessions=sessions),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    events: list[dict[str, Any]] = []
    assert proc.stdout is not None
    with proc.stdout:
        for line in proc.stdout:
            events.append(orjson.loads(line))
            if len(events) == kill_after:
                os.killpg(proc.pid, signal.SIGKILL)
                break
    code = proc.wait(timeout=TIMEOUT)
    if kill_after is None:
        assert code == 0
    return events


def verification(sessions: Path) -> tuple[bool, tuple[str, ...]]:
    """The last verification's outcome (passed, commands) in the one session's journal."""
    [directory] = [p for p in sessions.iterdir() if p.is_dir()]
    scan = scan_journal(directory / JOURNAL)
    verified = [f.fields() for f in scan.records if f.parsed().kind == "verified"]
    assert verified, "the session never ran its verification"
    return verified[-1].get("passed", False), tuple(verified[-1]["commands"])


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, bytes], Any]:
    """The uninterrupted demo: its number of events, its files, its verification."""
    root = tmp_path_factory.mktemp("reference")
    events = demo(root / "ws", root / "sessions", kill_after=None)
    return len(events), workspace_files(root / "ws"), verification(root / "sessions")


def test_the_uninterrupted_demo_verifies_its_work(reference: tuple[int, Any, Any]) -> None:
    _, written, (passed, commands) = reference
    assert passed
    # The session's --verify, then each plan task's acceptance check.
    assert commands == (
        "python -m doctest README.md",
        "python test_mathutil.py",
        "python test_textutil.py",
        "echo 'a bb ccc dddd' | python wordstats.py",
    )
    assert {"README.md", "mathutil.py", "textutil.py", "wordstats.py"} <= set(written)


@pytest.mark.parametrize("kills", sized("CRASH_DEMO_KILLS", 4, 20))
def test_the_demo_killed_anywhere_then_resumed_ends_as_if_never_killed(
    tmp_path: Path, reference: tuple[int, dict[str, bytes], Any], kills: int
) -> None:
    count, written, verified = reference
    rng = random.Random(18)
    for trial in range(kills):
        here = tmp_path / str(trial)
        sessions, workspace = here / "sessions", here / "ws"
        demo(workspace, sessions, kill_after=rng.randint(1, count - 1))
        [session_id] = [p.name for p in sessions.iterdir() if p.is_dir()]
        resumed = subprocess.run(
            command("resume", session_id, "--yes", "--approve", sessions=sessions),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=TIMEOUT,
            check=False,
        )
        assert resumed.returncode == 0, (trial, resumed.stderr[-2000:])
        assert workspace_files(workspace) == written, trial
        assert verification(sessions) == verified, trial
        assert_plan_agrees(sessions / session_id, trial)


def assert_plan_agrees(directory: Path, trial: int) -> None:
    """The plan (v2, after the re-plan), the builder's todos and the task tree agree: one
    linked todo per plan task, its status the one its task's state maps to."""
    state = load_state(directory, warn=pytest.fail)
    plans = state.plans
    assert [(v.version, v.decision) for v in plans.versions] == [
        (1, "approved"),
        (2, "approved"),
    ], trial
    assert plans.seeded == 2, trial
    plan = plans.approved
    assert plan is not None
    items = state.todos["main"].items
    for task in plan.tasks:
        record = state.tasks.by_plan_ref(task.id)
        assert record is not None, (trial, task.id)
        assert record.state == "completed", (trial, task.id, record.state)
        assert items[task.id].plan_task == task.id, trial
        assert items[task.id].status == todo_status(record.state), (trial, task.id)
