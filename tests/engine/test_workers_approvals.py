"""A task on a worker started without `--yes`: its calls that the permission rules ask
about are put to its session, whose approver answers them (engine/approvals.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

pytest.importorskip("dbos")

from orchestrator import (
    ApprovalRequest,
    Denied,
    Grant,
    RunResult,
    RunSettings,
    ScriptedModel,
    Unasked,
    drive,
    load_state,
    open_session,
)
from orchestrator.engine import dbos_workers
from orchestrator.engine.approvals import decode_answer, encode_answer
from orchestrator.engine.store import Store
from orchestrator.models.scripted import parse_script
from orchestrator.tools import PermissionPolicy, workspace_tools
from tests.engine.test_workers import Setup, main_script
from tests.engine.workers import start_worker
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

    settings = RunSettings(
        model=ScriptedModel(parse_script(setup.script)),
        tools=workspace_tools(),
        policy=PermissionPolicy(),  # the default: a write asks
        approve=approve,
        runner=dbos_workers(
            setup.url, model=f"scripted:{setup.script_file}", workspace=setup.workspace
        ),
    )
    async with trio.open_nursery() as nursery:
        worker = await start_worker(nursery, setup.url, tmp_path, yes=False)
        with trio.fail_after(120):
            async with open_session(setup.root, setup.session_id, warn=lambda _: None) as live:
                result = await drive(live, settings)
        await worker.stop()
    assert result.status == "completed", (result, worker.lines)
    # Asked here, once each, naming the task; answered there.
    assert [(r.agent, r.tool, r.arguments["path"]) for r in asked] == [
        ("t1", "write_file", "a.txt"),
        ("t1", "write_file", "b.txt"),
    ]
    assert asked[0].who.startswith("task t1 (worker: a)")
    assert (setup.workspace / "a.txt").read_text() == "A"
    assert not (setup.workspace / "b.txt").exists()
    store = Store(setup.url)
    records = b"".join(line for _, line in store.records(f"{setup.session_id}/t1"))
    store.close()
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

    settings = RunSettings(
        model=ScriptedModel(parse_script(setup.script)),
        tools=workspace_tools(),
        policy=PermissionPolicy(),
        approve=approve,
        runner=dbos_workers(
            setup.url, model=f"scripted:{setup.script_file}", workspace=setup.workspace
        ),
    )
    outcome: list[RunResult] = []
    ended = trio.Event()

    async def session() -> None:
        async with open_session(setup.root, setup.session_id, warn=lambda _: None) as live:
            outcome.append(await drive(live, settings))
        ended.set()

    async with trio.open_nursery() as nursery:
        first = await start_worker(nursery, setup.url, tmp_path, "first", yes=False)
        nursery.start_soon(session)
        with trio.fail_after(120):
            await first_asked.wait()
            first.kill()
            await first.process.wait()
            second = await start_worker(nursery, setup.url, tmp_path, "second", yes=False)
            await second.see("is silent: its tasks are queued again")
            answer_now.set()
            await ended.wait()
        await second.stop()
    assert outcome[0].status == "completed", (outcome, second.lines)
    assert [r.arguments["path"] for r in asked] == ["a.txt", "b.txt"]  # a.txt once
    assert (setup.workspace / "a.txt").read_text() == "A"
    assert second.count("task t1: call write_file") == 2  # a.txt (asked again), b.txt


def test_an_answer_crosses_the_database_as_it_was_given() -> None:
    for answer in (True, False, Denied("no"), Unasked(), Grant("shell", "pytest *")):
        assert decode_answer(encode_answer(answer)) == answer
