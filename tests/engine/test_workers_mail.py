"""Mail into a task on a worker goes by DBOS's messages (`send` to the task's workflow,
`recv` inside it): a message sent twice is posted once in the task's journal, and one
received just before its worker is killed is posted once by the worker that takes the
workflow over."""

from __future__ import annotations

import functools
from pathlib import Path

import msgspec
import pytest
import trio

pytest.importorskip("dbos")

from dbos import DBOS

from orchestrator import Event, MessagePosted, load_state
from orchestrator.engine.workflow import MAIL
from tests.engine.sessions import ANSWERED, Setup
from tests.engine.workers import WorkerProcess, mail_sent, start_worker

# Run in a worker before its command line: it kills itself (SIGKILL) once its workflow
# has received a message (`recv`, recorded by DBOS) and before the step that hands it
# to the task.
DIE_AFTER_RECV = """
import os, signal
import orchestrator.engine.workflow as workflow
hand_over = workflow._hand_over
def dying(workflow_id, message):
    if message and message.startswith("{"):
        print("killed between recv and hand-over", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    return hand_over(workflow_id, message)
workflow._hand_over = dying
"""
# Likewise, once the wait for the task's loop's end has the task's state, and before
# the workflow's end is recorded.
DIE_BEFORE_THE_END = """
import os, signal
from orchestrator.engine.worker import Worker
wait = Worker.wait
async def dying(self, workflow_id):
    state = await wait(self, workflow_id)
    if state:
        print("killed before the workflow's end", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    return state
Worker.wait = dying
"""


class SendAgain:
    """The session's events: its answer to t1, once posted there, is sent to t1's
    workflow again, as the session sends it (its key) and under another key."""

    def __init__(self, nursery: trio.Nursery, workflow: str) -> None:
        self._nursery = nursery
        self._workflow = workflow

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        if isinstance(event, MessagePosted) and event.to == "t1" and event.mail == "answer":
            self._nursery.start_soon(self._send_again, event)

    async def _send_again(self, answer: MessagePosted) -> None:
        line = msgspec.json.encode(answer).decode()
        for key in (f"{self._workflow}:{answer.id}", "again"):
            send = functools.partial(DBOS.send, self._workflow, line, MAIL, idempotency_key=key)
            await trio.to_thread.run_sync(send)


async def test_a_message_sent_twice_is_posted_once_in_the_task_s_journal(tmp_path: Path) -> None:
    """The answer to a task's question sent to its workflow three times: twice under its
    key (the session's send and another: DBOS keeps one), once under another key
    (received, and not posted again: the task's journal has its id). The task takes it
    once and goes on."""
    setup = Setup(tmp_path, ANSWERED)
    workflow = f"{setup.session_id}/t1"
    async with trio.open_nursery() as nursery:
        worker = await start_worker(nursery, setup.url, tmp_path)
        with trio.fail_after(120):
            result = await setup.run(sink=SendAgain(nursery, workflow))
        await worker.stop()
    assert result.status == "completed", (result, worker.lines)
    assert (setup.workspace / "choice.txt").read_text() == "x"
    (answer,) = setup.journal_lines('"mail":"answer"')
    answer_id = msgspec.json.decode(answer)["id"]
    sent = mail_sent(setup.url, workflow)
    assert sent[f"{workflow}:{answer_id}"] is True
    assert "again" in sent  # (received, unless the task's run ended first)
    records = setup.task_records()
    found = b'"k":"message_posted","a":"main","id":"%s"' % answer_id.encode()
    assert records.count(found) == 1
    assert (
        records.count(b'"k":"messages_delivered","a":"t1","ids":["%s"]' % answer_id.encode()) == 1
    )
    assert load_state(setup.directory, warn=pytest.fail).tasks.get("t1").state == "completed"


async def test_a_message_received_before_its_worker_is_killed_is_posted_once(
    tmp_path: Path,
) -> None:
    """The worker running the task is killed between its workflow's `recv` of the
    answer (recorded by DBOS, the message consumed) and the step that hands it over.
    Another worker takes the workflow over; replayed, the `recv` gives the answer again
    (the session does not send it twice), the step posts it once, and the task goes on."""
    setup = Setup(tmp_path, ANSWERED)
    dying, second = await killed_and_taken_over(setup, DIE_AFTER_RECV, "between recv")
    assert not [line for line in dying.lines if "task t1: completed" in line]
    assert [line for line in second.lines if "task t1: completed" in line]


async def test_a_workflow_replayed_to_its_recorded_end_runs_nothing_again(
    tmp_path: Path,
) -> None:
    """The worker is killed once its wait has the task's state and before the workflow's
    end: the worker that takes it over replays every recorded `recv` and hand-over
    (nothing handed over twice), runs none of the task's calls, and ends the workflow
    with the state its journal has."""
    setup = Setup(tmp_path, ANSWERED)
    dying, second = await killed_and_taken_over(setup, DIE_BEFORE_THE_END, "before the")
    assert [line for line in dying.lines if "task t1: completed" in line]
    assert not [line for line in second.lines if "task t1" in line]


async def killed_and_taken_over(
    setup: Setup, before: str, killed: str
) -> tuple[WorkerProcess, WorkerProcess]:
    """`setup`'s session run on a worker that runs `before` (and kills itself, saying
    `killed`), then on another that takes its workflow over; checked: the session
    completed, the answer reached the task once, the task completed once."""

    async def kills_itself(dying: WorkerProcess) -> None:
        await dying.see(killed)

    _, dying, second = await setup.taken_over(kills_itself, first="dying", before=before)
    assert (setup.workspace / "choice.txt").read_text() == "x"
    (answer,) = setup.journal_lines('"mail":"answer"')
    answer_id = msgspec.json.decode(answer)["id"].encode()
    records = setup.task_records()
    assert records.count(b'"k":"message_posted","a":"main","id":"%s"' % answer_id) == 1
    assert records.count(b'"k":"messages_delivered","a":"t1","ids":["%s"]' % answer_id) == 1
    assert records.count(b'"k":"call_result","a":"t1"') == 3  # ask, write, complete
    assert len(setup.journal_lines('"mail":"completed"')) == 1
    return dying, second
