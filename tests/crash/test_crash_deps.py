"""SIGKILL a session whose tasks wait for each other (`delegate(after=...)`), resume it,
and check that the dependencies held through every kill.

The main agent delegates a diamond in one reply: `t1`, then `t2` and `t3` after `t1`,
then `t4` after both. Each worker writes a file and appends a line to its own log with
`shell` (not idempotent: a repeat shows as a duplicate line), then completes. The session
runs with the real CLI in a subprocess and is killed at seeded random points, resumed,
maybe killed again, until it completes; so kills fall while tasks wait, as a dependency
completes, and as a waiting task starts.

Then, from the journal: every task completed once; no task's subagent made a model call
before each of its dependencies had completed (and none ran before it was started from
`waiting_deps`); each scripted reply entered its context once; no side effect ran twice;
and each completion reached the main agent's context exactly once.

Every `pytest` runs the first two seeds, `pytest -m slow` the others;
`CRASH_DEPS_SEEDS` (comma-separated) replaces the seeds; `CRASH_DEPS_KILLS` (default 4)
bounds the kills per session.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator import AssistantMessage
from tests.crash.harness import seeded
from tests.crash.test_crash_team import TeamCrashRun, completed_record_of, m_text, rewind
from tests.scenes import call

SEEDS = seeded("CRASH_DEPS_SEEDS", "11,22,33,44,55", quick=2)
KILLS = int(os.environ.get("CRASH_DEPS_KILLS", "4"))
GRAPH: dict[str, list[str]] = {"t1": [], "t2": ["t1"], "t3": ["t1"], "t4": ["t2", "t3"]}


def script() -> dict[str, Any]:
    delegate = [
        call(
            "delegate", description=task, prompt=f"Do {task}.", write_scope=[f"{task}/"], after=deps
        )
        for task, deps in GRAPH.items()
    ]
    agents: dict[str, Any] = {
        "main": [
            {"text": "Delegating the diamond.", "tool_calls": delegate},
            {"tool_calls": [call("wait_tasks")]},
            *[{"text": f"All parts are done, or will be ({n})."} for n in range(40)],
        ]
    }
    for task in GRAPH:
        agents[task] = [
            {"tool_calls": [call("write_file", path=f"{task}/out.txt", content=f"{task}\n")]},
            {"tool_calls": [call("shell", command=f"echo {task} >> {task}/log.txt")]},
            {
                "tool_calls": [
                    call(
                        "complete",
                        summary=f"{task} finished",
                        files_changed=[f"{task}/out.txt", f"{task}/log.txt"],
                    )
                ]
            },
        ]
    return {"version": 1, "agents": agents}


def check_dependencies_held(run: TeamCrashRun) -> None:
    journal = run.journal()
    completed = {
        r["task"]: r["seq"]
        for r in journal
        if r["k"] == "task_changed" and r["state"] == "completed"
    }
    for task, deps in GRAPH.items():
        first_reply = min(
            r["seq"] for r in journal if r["k"] == "assistant_replied" and r["a"] == task
        )
        first_run = min(
            r["seq"]
            for r in journal
            if r["k"] == "task_changed" and r["task"] == task and r["state"] == "running"
        )
        for dep in deps:
            assert completed[dep] < first_run < first_reply, (task, dep, journal)
        created = next(r for r in journal if r["k"] == "task_created" and r["task"] == task)
        assert created.get("after", []) == deps
        assert created.get("state", "pending") == ("waiting_deps" if deps else "pending")


def check_final(run: TeamCrashRun) -> None:
    state = run.final_state()
    assert state.status == "completed"
    for task in GRAPH:
        record = state.tasks.get(task)
        assert record is not None
        assert (record.state, record.attempts) == ("completed", 1), (task, record.reason)
        replies = [m for m in state.agents[task].messages if isinstance(m, AssistantMessage)]
        assert len(replies) == 3, (task, len(replies))  # each scripted reply once
        lines = (
            (run.workspace / task / "log.txt").read_text().splitlines()
            if (run.workspace / task / "log.txt").exists()
            else []
        )
        interrupted = any(c.startswith(f"call_{task}_") for c in run.interrupted)
        assert lines == [task] or (interrupted and lines == []), (task, lines)
    check_dependencies_held(run)
    main = "\n".join(m_text(m) for m in state.agents["main"].messages)
    for task in GRAPH:
        assert main.count(f"{task} finished") == 1, task


@pytest.fixture(scope="module")
def script_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("deps-script") / "script.json"
    path.write_bytes(orjson.dumps(script()))
    return path


def test_the_uninterrupted_run_keeps_the_dependencies(tmp_path: Path, script_path: Path) -> None:
    run = TeamCrashRun(tmp_path / "sessions", script_path, tmp_path, random.Random(0))
    assert run.step(kill_after_events=None) == 0
    check_final(run)
    assert not run.interrupted


@pytest.mark.parametrize("seed", SEEDS)
def test_deps_sigkill_at_random_points_then_resume(
    tmp_path: Path, seed: int, script_path: Path
) -> None:
    rng = random.Random(seed)
    run = TeamCrashRun(tmp_path / "sessions", script_path, tmp_path, rng)
    waiting_at_a_kill = 0
    for _ in range(KILLS):
        if run.step(kill_after_events=rng.randint(1, 110)) is not None:
            break
        run.check_invariants()
        waiting_at_a_kill += bool(run.final_state().tasks.waiting())
    else:
        assert run.step(kill_after_events=None) == 0
    check_final(run)
    print(f"seed {seed}: {run.kills} kills, {waiting_at_a_kill} with tasks waiting")


def test_a_session_stopped_while_tasks_wait_resumes_and_runs_them(
    tmp_path: Path, script_path: Path
) -> None:
    """Stopped right after t1 completed: t2, t3 and t4 wait (the fold says so), and the
    resumed process starts t2 and t3 at once, and t4 after both."""
    from orchestrator import load_state

    run = TeamCrashRun(tmp_path / "sessions", script_path, tmp_path, random.Random(0))
    assert run.step(kill_after_events=None) == 0
    cut = rewind(run.directory, completed_record_of("t1"))
    for task in ("t2", "t3", "t4"):
        (run.workspace / task / "log.txt").unlink()  # written after that instant
    waiting = load_state(run.directory, warn=lambda _: None).tasks.waiting()
    assert [t.task_id for t in waiting] == ["t2", "t3", "t4"]
    assert run.step(kill_after_events=None) == 0
    check_final(run)
    started = [
        r["task"]
        for r in run.journal()
        if r["k"] == "task_changed" and r["state"] == "pending" and r["seq"] > cut
    ]
    assert started == ["t2", "t3", "t4"]


def test_the_dependency_check_can_fail(tmp_path: Path, script_path: Path) -> None:
    run = TeamCrashRun(tmp_path / "sessions", script_path, tmp_path, random.Random(0))
    assert run.step(kill_after_events=None) == 0
    journal = run.journal()
    # A journal in which t4's first reply came before t3 completed must be refused.
    early = next(r for r in journal if r["k"] == "assistant_replied" and r["a"] == "t4")
    late = next(
        r
        for r in journal
        if r["k"] == "task_changed" and r["task"] == "t3" and r["state"] == "completed"
    )
    swapped = [{**r, "seq": late["seq"] - 1} if r is early else r for r in journal]
    run.journal = lambda: swapped  # type: ignore[method-assign]
    with pytest.raises(AssertionError):
        check_dependencies_held(run)
