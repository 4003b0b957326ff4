"""Dependencies across a restart, in process: a session on disk, run to its end, then cut
at chosen journal records (as a crash leaves it) and resumed. The fold alone says which
tasks wait; the resume starts those whose dependencies completed while it was down,
cancels those whose dependency failed, and tells the owner of each exactly once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from orchestrator import (
    RunResult,
    ScriptedModel,
    SessionState,
    drive,
    load_state,
    mail_history,
    open_session,
)
from orchestrator.models.scripted import parse_script
from orchestrator.session.live import JOURNAL, SNAPSHOT
from tests.scenes import call, run_settings, scripted_session
from tests.team.engines import Engine

SPARE = [{"text": f"All done, or will be ({n})."} for n in range(8)]

CHAIN: dict[str, Any] = {
    "agents": {
        "main": [
            {
                "tool_calls": [
                    call("delegate", description="one", prompt="1", write_scope=["a/"]),
                    call("delegate", description="two", prompt="2", after=["t1"]),
                    call("delegate", description="three", prompt="3", after=["t2"]),
                ]
            },
            {"tool_calls": [call("wait_tasks")]},
            *SPARE,
        ],
        "t1": [{"tool_calls": [call("complete", summary="one done")]}],
        "t2": [{"tool_calls": [call("complete", summary="two done")]}],
        "t3": [{"tool_calls": [call("complete", summary="three done")]}],
    }
}

FAILING: dict[str, Any] = {
    "agents": {
        "main": CHAIN["agents"]["main"],
        "t1": [],  # its first model call fails: the script has nothing for it
        "t2": [{"tool_calls": [call("complete", summary="never")]}],
        "t3": [{"tool_calls": [call("complete", summary="never")]}],
    }
}


async def run(root: Path, session_id: str, script: dict[str, Any], engine: Engine) -> RunResult:
    settings = run_settings(
        ScriptedModel(parse_script(script)),
        runner=engine.runner,
    )
    # A task that never starts would hang the run: fail it instead.
    with trio.fail_after(30):
        async with open_session(root, session_id, warn=lambda _: None) as live:
            return await drive(live, settings)


async def finished(
    tmp_path: Path, script: dict[str, Any], engine: Engine
) -> tuple[Path, str, Path]:
    """A session of `script` run to its end: (root, id, directory)."""
    root, session_id, directory = scripted_session(tmp_path, script)
    assert await run(root, session_id, script, engine) == RunResult("completed")
    return root, session_id, directory


def cut_after(directory: Path, keep: Callable[[dict[str, Any]], bool]) -> int:
    """Leave the session as a crash right after the first record `keep` accepts leaves it:
    the journal cut there, no snapshot, the manifest as the run's start wrote it."""
    lines = (directory / JOURNAL).read_bytes().splitlines(keepends=True)
    for index, line in enumerate(lines):
        fields = orjson.loads(line)
        if keep(fields):
            (directory / JOURNAL).write_bytes(b"".join(lines[: index + 1]))
            (directory / SNAPSHOT).unlink(missing_ok=True)
            manifest = directory / "session.json"
            data = orjson.loads(manifest.read_bytes())
            manifest.write_bytes(orjson.dumps({**data, "journal_seq": 0}))
            return int(fields["seq"])
    raise AssertionError("no such record")


def changed_to(task: str, state: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r["k"] == "task_changed" and r["task"] == task and r["state"] == state


def records(directory: Path, kind: str) -> list[dict[str, Any]]:
    lines = (directory / JOURNAL).read_bytes().splitlines()
    return [f for f in map(orjson.loads, lines) if f["k"] == kind]


def state_of(directory: Path) -> SessionState:
    return load_state(directory, warn=lambda _: None)


def main_text(state: SessionState) -> str:
    return "\n".join(getattr(m, "content", "") for m in state.agents["main"].messages)


async def test_tasks_whose_dependency_completed_before_the_crash_start_on_resume(
    tmp_path: Path,
    engine: Engine,
) -> None:
    root, session_id, directory = await finished(tmp_path, CHAIN, engine)
    cut = cut_after(directory, changed_to("t1", "completed"))
    # The fold alone says which tasks wait, and for what.
    before = state_of(directory).tasks
    assert [(t.task_id, t.state) for t in before.waiting()] == [
        ("t2", "waiting_deps"),
        ("t3", "waiting_deps"),
    ]
    assert before.get("t3").after == ["t2"]
    assert await run(root, session_id, CHAIN, engine) == RunResult("completed")
    state = state_of(directory)
    assert {t.task_id: t.state for t in state.tasks.tasks.values()} == {
        "t1": "completed",
        "t2": "completed",
        "t3": "completed",
    }
    # t2 started from the resume's look at the waiting tasks, t3 when t2 completed.
    started = [r for r in records(directory, "task_changed") if r["state"] == "pending"]
    assert [(r["task"], r["seq"] > cut) for r in started] == [("t2", True), ("t3", True)]
    for task in ("t2", "t3"):
        assert state.tasks.get(task).instances == [f"{task}.1"]
        assert state.agents[task].steps == 1  # its one scripted reply, used once
    assert "Waiting for their dependencies: t2, t3." not in main_text(state)
    assert "Waiting for their dependencies: t3." in main_text(state)


async def test_a_dependency_failed_before_the_crash_cancels_its_dependants_on_resume(
    tmp_path: Path,
    engine: Engine,
) -> None:
    root, session_id, directory = await finished(tmp_path, FAILING, engine)
    cut_after(directory, changed_to("t1", "failed"))
    assert [t.task_id for t in state_of(directory).tasks.waiting()] == ["t2", "t3"]
    assert await run(root, session_id, FAILING, engine) == RunResult("completed")
    check_cancelled_and_told_once(directory)


@pytest.mark.parametrize("task", ["t2", "t3"])
async def test_a_notice_cut_off_by_the_crash_is_posted_on_resume_once(
    tmp_path: Path, task: str, engine: Engine
) -> None:
    """Killed after the cancellation's record, before the risk_alert that tells the
    owner: the fold shows the notice missing, and the resume posts it."""
    root, session_id, directory = await finished(tmp_path, FAILING, engine)
    check_cancelled_and_told_once(directory)
    cut_after(directory, changed_to(task, "cancelled"))
    assert state_of(directory).tasks.get(task).state == "cancelled"
    assert await run(root, session_id, FAILING, engine) == RunResult("completed")
    check_cancelled_and_told_once(directory)


def check_cancelled_and_told_once(directory: Path) -> None:
    state = state_of(directory)
    tasks = state.tasks
    assert tasks.get("t1").state == "failed"
    assert (tasks.get("t2").state, tasks.get("t2").reason) == (
        "cancelled",
        "its dependency t1 failed",
    )
    assert (tasks.get("t3").state, tasks.get("t3").reason) == (
        "cancelled",
        "its dependency t2 was cancelled because t1 failed",
    )
    notices = [m for m in mail_history(directory) if m.summary.startswith("task cancelled")]
    assert sorted((m.sender, m.recipient) for m in notices) == [("t2", "main"), ("t3", "main")]
    assert all(m.delivered_seq is not None for m in notices)
    text = main_text(state)
    for mail in notices:
        assert text.count(mail.summary) == 1, mail.summary
    assert state.agents["t2"].steps == state.agents["t3"].steps == 0  # they never ran


async def test_a_snapshot_keeps_what_waiting_tasks_wait_for() -> None:
    """Resume from a snapshot: the records and the registry's indexes (waiting tasks,
    dependants) come back as the fold made them."""
    from orchestrator import MemorySession, TaskChanged, TaskCreated

    session = MemorySession()
    for task, fields in (
        ("t1", {"plan_ref": "build"}),
        ("t2", {"after": ("t1",), "state": "waiting_deps"}),
        ("t3", {"after_plan": ("build",), "serialise": True, "state": "waiting_deps"}),
        ("t4", {"after": ("t2",), "state": "waiting_deps"}),
    ):
        await session.emit(
            TaskCreated(agent="main", task=task, agent_type="worker", description=task, **fields)
        )
    await session.emit(
        TaskChanged(agent="main", task="t4", state="cancelled", reason="r", dependency="t2")
    )
    back = SessionState.from_snapshot(session.state.snapshot())
    for state in (session.state, back):
        tasks = state.tasks
        assert [t.task_id for t in tasks.waiting()] == ["t2", "t3"]
        assert [t.task_id for t in tasks.dependants("t1")] == ["t2", "t3"]
        assert tasks.dependants("t2") == []  # t4 no longer waits
        assert (tasks.get("t3").after_plan, tasks.get("t3").serialise) == (["build"], True)
        assert tasks.get("t4").dependency == "t2"
