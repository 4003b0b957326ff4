"""A task on a worker started without `--yes`: its calls that the permission rules ask
about are put to its session, whose approver answers them (engine/approvals.py)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

pytest.importorskip("dbos")

from orchestrator import (
    ApprovalRequest,
    Denied,
    Grant,
    SessionSettings,
    Unasked,
    load_state,
)
from orchestrator.engine.approvals import decode_answer, encode_answer
from tests.engine.sessions import TWO_TASKS, Setup, main_script
from tests.engine.workers import WorkerProcess, start_worker
from tests.scenes import call

SCRIPT: dict[str, Any] = {
    "agents": {
        "main": main_script(
            call("delegate", description="a", prompt="write a", write_scope=["a.txt", "b.txt"])
        ),
        "t1": [
            {"tool_calls": [call("write_file", path="a.txt", content="A")]},
            {"tool_calls": [call("write_file", path="b.txt", content="B")]},
            {"tool_calls": [call("complete", summary="wrote a, not b")]},
        ],
    }
}


async def test_a_worker_puts_its_task_s_questions_to_the_session(tmp_path: Path) -> None:
    setup = Setup(tmp_path, SCRIPT)
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool | Denied:
        asked.append(request)
        if request.arguments.get("path") == "a.txt":
            return True
        return Denied("not b, today")

    settings = setup.settings(approve=approve)  # the default rules: a write asks
    await setup.on_a_worker(lambda: setup.drive(settings), yes=False)
    # Asked here, once each, naming the task; answered there.
    assert [(r.agent, r.tool, r.arguments["path"]) for r in asked] == [
        ("t1", "write_file", "a.txt"),
        ("t1", "write_file", "b.txt"),
    ]
    assert asked[0].who.startswith("task t1 (worker: a)")
    assert (setup.workspace / "a.txt").read_text() == "A"
    assert not (setup.workspace / "b.txt").exists()
    records = setup.task_records()
    assert b"not b, today" in records  # what the task's model read of the refusal
    state = load_state(setup.directory, warn=pytest.fail)
    assert state.tasks.get("t1").state == "completed"


async def test_a_question_outlives_the_worker_that_asked_it(tmp_path: Path) -> None:
    """The worker waiting for its session's answer is killed: the worker that takes the
    task over asks the same call again, finds the answer given meanwhile, and the call
    runs once; the person was asked once."""
    setup = Setup(tmp_path, SCRIPT)
    asked: list[ApprovalRequest] = []
    first_asked, answer_now = trio.Event(), trio.Event()

    async def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        first_asked.set()
        await answer_now.wait()
        return True

    settings = setup.settings(approve=approve)

    async def killed(first: WorkerProcess) -> None:
        await first_asked.wait()
        first.kill()

    run = functools.partial(setup.drive, settings)
    _, _, second = await setup.taken_over(killed, run=run, then=answer_now.set, yes=False)
    assert [r.arguments["path"] for r in asked] == ["a.txt", "b.txt"]  # a.txt once
    assert (setup.workspace / "a.txt").read_text() == "A"
    assert second.count("task t1: call write_file") == 2  # a.txt (asked again), b.txt


def test_an_answer_crosses_the_database_as_it_was_given() -> None:
    for answer in (True, False, Denied("no"), Unasked(), Grant("shell", "pytest *")):
        assert decode_answer(encode_answer(answer)) == answer


TWO_WRITERS = TWO_TASKS  # t1 writes a.txt, t2 b.txt


async def test_a_grant_answered_for_one_task_on_a_worker_holds_for_the_others(
    tmp_path: Path,
) -> None:
    """One session, one set of answers: "always" for t1's write is the session's, so t2's
    write on a worker is allowed without asking the person again."""
    setup = Setup(tmp_path, TWO_WRITERS)
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> Grant:
        asked.append(request)
        return Grant("write_file")

    settings = setup.settings(
        approve=approve,
        session=SessionSettings(max_live=1),  # t2 starts once t1 is done
    )
    await setup.on_a_worker(lambda: setup.drive(settings), yes=False)
    assert [r.agent for r in asked] == ["t1"]  # asked once, for the first task
    assert (setup.workspace / "b.txt").read_text() == "B"
    state = load_state(setup.directory, warn=pytest.fail)
    assert [g.tool for g in state.grants] == ["write_file"]  # the session's own


async def test_a_headless_session_whose_remote_calls_nobody_can_approve_ends_blocked(
    tmp_path: Path,
) -> None:
    """No terminal, no --yes, a worker without --yes: each task's write is refused here
    for want of anyone to ask, and counted as the session's own refusals are: the run
    ends blocked (exit 3), naming the calls."""
    setup = Setup(tmp_path, TWO_WRITERS)
    async with trio.open_nursery() as nursery:
        worker = await start_worker(nursery, setup.url, tmp_path, yes=False)
        with trio.fail_after(120):
            await worker.see("takes tasks from")
            ran = await trio.run_process(
                [
                    sys.executable, "-m", "orchestrator", "resume", setup.session_id,
                    "--sessions-dir", str(setup.root), "--engine", "dbos", "--workers",
                    "--database-url", setup.url,
                ],
                capture_stdout=True,
                capture_stderr=True,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "NO_COLOR": "1"},
                check=False,
            )  # fmt: skip
        await worker.stop()
    out = ran.stdout.decode() + ran.stderr.decode()
    assert ran.returncode == 3, out
    assert "write_file refused: nobody here to ask" in out
    state = load_state(setup.directory, warn=pytest.fail)
    assert sorted((r.agent, r.tool) for r in state.refused) == [
        ("t1", "write_file"),
        ("t2", "write_file"),
    ]
    assert not (setup.workspace / "a.txt").exists()
