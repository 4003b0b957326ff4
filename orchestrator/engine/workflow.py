"""The workflow of a task on a worker (engine/worker.py; docs/engine.md): its name, the
topics of what is sent to it, and its loop of DBOS operations.

A task run on a worker is one DBOS workflow, `<session id>/<task id>[/n]`, taken from the
queue by one worker. The workflow makes sure the task's loop runs here, on trio, in a
team of its own over the task's session in the database (`TaskSession`), so the loop,
its write-ahead records and its resume after a crash are the ones a session on disk
has: a call cut off by a kill is reported `interrupted` to the model, never run again
silently. Then it waits on the worker for the loop's end, which ends the workflow with
the task's state, or for mail: each message sent to it (DBOS's `recv`, recorded by DBOS)
is handed to the task by a step that posts it in the task's session under its own id,
once. The wait is no operation of DBOS's (none recorded, none read back: two of DBOS's
transactions a task fewer); a workflow run again after its worker died takes the same
turns because it first receives and hands over again, one for each `recv` DBOS
recorded, the messages it had received, in order, before it waits for more.

The workflow runs on a thread of DBOS's; what it asks of the worker (`Host`) runs on the
worker's trio loop.
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import trio
from dbos import DBOS

from orchestrator.errors import OrchestratorError

QUEUE = "orchestrator_tasks"
WORKFLOW = "orchestrator.remote_task"
STEP = "orchestrator.remote_task_mail"
MAIL = "mail"  # the topic of what is sent to a task's workflow: a `MessagePosted` line,
CANCEL = "cancel"  # or its session's cancellation
WAIT = 60.0  # seconds a workflow's `recv` waits for the mail its wait saw (should another
# execution of the workflow have taken it meanwhile: it then hands over nothing)


T = TypeVar("T")


class Host(Protocol):
    """What the task's workflow, on its own thread, asks of the worker that serves in
    this process."""

    token: trio.lowlevel.TrioToken
    stopping: bool

    async def begin(self, workflow_id: str, traceparent: str = "") -> int: ...
    async def wait(self, workflow_id: str) -> str: ...
    async def hand_over(self, workflow_id: str, message: str | None) -> None: ...
    async def forget(self, workflow_id: str) -> None: ...


SERVING: list[Host] = []  # the process's worker: DBOS calls the workflow by name only


@DBOS.workflow(name=WORKFLOW)
def _remote_task(key: str, traceparent: str = "") -> str:
    """The task of run `key`: its loop running here, what is sent to it handed over,
    until the loop has ended; the task's state then. `traceparent`: the delegating
    call's span, when its session is traced (docs/tracing.md). Run again from its start
    after a recovery, it first receives again as many messages as DBOS recorded it
    receiving (`Worker.begin` says how many), the same ones in the same order, and each
    step already recorded is not run again: a message the task had is not posted twice,
    and one received before a kill and not yet handed over is handed over now."""
    worker = _worker()
    workflow_id = DBOS.workflow_id or ""
    received = _in_trio(worker, worker.begin, workflow_id, traceparent)
    try:
        for _ in range(received):  # (a run again: what it had received, as it came)
            _hand_over(workflow_id, DBOS.recv(MAIL, timeout_seconds=WAIT))
        while True:
            state = _in_trio(worker, worker.wait, workflow_id)
            if state:
                return state
            _hand_over(workflow_id, DBOS.recv(MAIL, timeout_seconds=WAIT))
    finally:
        _in_trio(worker, worker.forget, workflow_id)


@DBOS.step(name=STEP)
def _hand_over(workflow_id: str, message: str | None) -> None:
    """`message` handed to the task of `workflow_id` (posted in its journal before the
    step's output is recorded)."""
    worker = _worker()
    _in_trio(worker, worker.hand_over, workflow_id, message)


def _worker() -> Host:
    if not SERVING:
        raise OrchestratorError("no worker serves in this process")
    return SERVING[0]


def _in_trio(worker: Host, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`fn(*args)` on the worker's trio loop, from the workflow's thread. Once the worker
    stops (Ctrl+C) the thread holds on instead: DBOS records no outcome, so the workflow
    stays open and another worker takes it over (the process ends without this thread).
    `fn` runs without the workflow's DBOS context (trio would carry this thread's context
    into it and the task's loop it starts): a call to DBOS from the loop's side, the
    wake-up at its end, is no operation of the workflow."""
    if not worker.stopping:
        try:
            call = functools.partial(trio.from_thread.run, fn, *args, trio_token=worker.token)
            return contextvars.Context().run(call)
        except BaseException:
            if not worker.stopping:
                raise
    threading.Event().wait()
    raise AssertionError("unreachable")


def queued_versions() -> dict[str, int]:
    """How many tasks wait on the queue, by the version of the session that queued them."""
    queued = DBOS.list_queued_workflows(
        queue_name=QUEUE, status="ENQUEUED", load_input=False, load_output=False
    )
    counts: dict[str, int] = {}
    for workflow in queued:
        version = workflow.app_version or ""
        counts[version] = counts.get(version, 0) + 1
    return counts
