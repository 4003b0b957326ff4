"""Delegated tasks on workers: the runner of the dbos engine whose tasks run on
`orchestrator worker` processes, on this host or others (docs/engine.md).

Starting a task puts it on the engine's queue as a DBOS workflow (`<session>/<task>`, its
later runs `/2`, `/3`...), and a worker takes it (engine/worker.py). The task's records
live in the engine's database; a new task's are seeded there from this session's state
(its settings, its context's start, its record). While it runs this runner follows them:

- a message the task posts (its progress, its completion, a question) is posted in this
  session under the id the worker gave it (`t3.m1`...), once, so a follower started
  again after a crash passes on only what this session does not have;
- the task's state is mirrored here (the scheduler's own `set_state`), so its owner,
  the dependants and the live view see it as they see a local task's; a cancellation
  is this session's and is never undone by the mirror;
- its model calls are counted here (`task_usage`, up to a record of its journal), so
  this session's budgets and cost include them, once;
- a call of its that its rules ask about is put to this session's approver, and the
  answer written for the worker (engine/approvals.py);
- its turns, replies and calls are shown here as a local task's are (`TaskPort.show`:
  the live view, the transcript, `--json`), never journaled here, from the records read
  after it was taken up (`TaskEvents`: not a resumed session's catch-up);
- mail to the task is sent to its workflow (DBOS's `send`, under the key
  `<workflow id>:<message id>`: sent twice, received once), and delivered here, which
  is this session's acknowledgement, once the task's journal has it.

What those records are is engine/handover.py's.

The main session's journal stays the truth for the main agent; the task's journal in
the database is the truth for the task.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import trio
from dbos import DBOS, EnqueueOptions

from orchestrator._version import __version__
from orchestrator.engine.approvals import Questions
from orchestrator.engine.handover import (
    TaskEvents,
    mirror_state,
    posted,
    spent,
    start_records,
)
from orchestrator.engine.launch import executor_id, launch_dbos
from orchestrator.engine.retry import ENGINE, PATIENCE
from orchestrator.engine.runner import OPEN, EngineRunner, next_workflow_id, task_workflows
from orchestrator.engine.store import Run, Store
from orchestrator.engine.task_session import fold, line_of
from orchestrator.engine.together import TaskCalls
from orchestrator.engine.urls import hide_password
from orchestrator.engine.workflow import CANCEL, MAIL, QUEUE, WORKFLOW
from orchestrator.messages import Usage
from orchestrator.session.on_workers import folded_rows
from orchestrator.state.events import Notice, Record
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import MessagePosted
from orchestrator.state.tasks import (
    SETTLED,
    TaskUsed,
    now_ms,
)
from orchestrator.team.port import TaskPort

FOLLOW = 0.2  # seconds between two looks at the running tasks' journals
STATUS_EVERY = 5  # looks at the journals per look at the workflows of those settled there
ALL_EVERY = 25  # looks at the journals per look at all their workflows' states
ALIVE = 60.0  # seconds since a worker's last beat within which it counts as alive
ENDED = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


@dataclass
class _Remote:
    task_id: str
    key: str  # `<session id>/<task id>`, its journal's in the database
    port: TaskPort
    workflow_id: str = ""
    cancelled: bool = False
    sent: set[str] = field(default_factory=set)  # message ids sent to its workflow
    mirror: SessionState | None = None  # its journal as far as read (once it is queued)
    ended: trio.Event = field(default_factory=trio.Event)  # its workflow has ended
    status: Any = None  # the workflow's, once ended
    told_queued: bool = False  # that no worker was there to take it
    shown: TaskEvents = field(default_factory=TaskEvents)  # its work and children, as shown


class RemoteRunner(EngineRunner[_Remote]):
    """A `Runner` whose tasks run on workers, through the database at `url`. `model` is
    the session's model spec (a worker makes the model with its own keys); `workspace`
    is the session's workspace, a path every worker must reach."""

    kind = "on workers"
    no_session = "tasks on workers need a session on disk"

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        url: str,
        model: str,
        workspace: str,
        patience: float = PATIENCE,
        store: Store | None = None,
        trace_parent: Callable[[str], str] | None = None,
    ) -> None:
        super().__init__(nursery, url=url, patience=patience)
        self._trace_parent = trace_parent  # a traced session's `traceparent` of a call
        self._model = model
        self._workspace = workspace
        self._own_store = store is None  # (else its owner's, which closes it)
        self._store = Store(url) if store is None else store
        self._questions = Questions(self._store, self._db, nursery)  # its tasks' approvals
        self._calls = TaskCalls(self._store, self._db)  # its new tasks' reads and seeds

    def _new_run(self, task_id: str, port: TaskPort) -> _Remote:
        return _Remote(task_id, f"{self._session_id}/{task_id}", port, shown=TaskEvents(task_id))

    def _cancel_run(self, run: _Remote) -> None:
        if not run.cancelled:
            run.cancelled = True
            if run.workflow_id:
                self._nursery.start_soon(self._cancel, run.workflow_id)

    async def _cancel(self, workflow_id: str) -> None:
        """Written on the run (a worker that takes it later only cancels it), and sent to
        its workflow (the worker that runs it cancels it now)."""
        await self._db.call(self._store.cancel_run, workflow_id)
        await self._db.call(_send, workflow_id, [(f"{workflow_id}:{CANCEL}", CANCEL)])

    def _run_of(self, workflow_id: str, key: str = "") -> Run:
        return Run(workflow_id, key or workflow_id, __version__, self._workspace, self._model)

    def _session_begun(self) -> None:
        self._nursery.start_soon(self._follow, name="tasks on workers")

    def _launch(self) -> None:
        launch_dbos(self._url, executor_id())
        DBOS.listen_queues([])  # the session only puts tasks on the queue: workers run them
        DBOS.launch()

    def _closed(self) -> None:
        if self._own_store:
            self._store.close()

    async def _work(self, task_id: str, port: TaskPort, run: _Remote) -> None:
        """The task put on the queue (its journal seeded first, unless it has begun) and
        followed until its workflow has ended; a task that ended while this session was
        stopped only caught up with."""
        key = run.key
        rows = await self._calls.records(key)  # (with those of the tasks begun meanwhile)
        mirror = SessionState()
        records = list(folded_rows(key, rows, mirror))
        start = start_records(port.state, mirror, task_id)
        # A new task (its journal empty): seeded with its first run, in one transaction,
        # unless it is cancelled already; no workflow of it can be there yet.
        first_run = None if rows or run.cancelled else self._run_of(key)
        if start:
            first = mirror.seq + 1
            lines = [(seq, line_of(seq, r)) for seq, r in enumerate(start, first)]
            await self._calls.seed(key, lines, first_run)  # (likewise)
            fold(key, lines, mirror)
        if not start and mirror.tasks.tasks[task_id].state in SETTLED:
            # It ended on a worker while this session was stopped: only its news.
            run.mirror = mirror
            await self._pass_on(run, records)
            return
        if rows:
            workflow_id, queued = await self._db.call(_next_run, key)
        else:
            workflow_id, queued = key, False
        if run.cancelled and not queued:
            return  # cancelled before it was queued: no worker need hear of it
        if not queued:
            if first_run is None or not start:
                await self._db.call(self._store.add_run, self._run_of(workflow_id, key))
            ref = port.state.tasks.tasks[task_id].created_by
            traced = self._trace_parent(ref) if self._trace_parent and ref else ""
            await self._db.call(_enqueue, workflow_id, key, traced)
        run.workflow_id = workflow_id  # from here on, `cancel` tells the worker
        if run.cancelled:
            await self._cancel(workflow_id)
        run.mirror = mirror
        await self._pass_on(run, records)  # what it did before this session stopped
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._forward, run)
            await run.ended.wait()  # (the follower's)
            nursery.cancel_scope.cancel()
        if run.status.status != "SUCCESS":  # (its loop's outcome is in its journal)
            await self._ended_badly(run)

    async def _follow(self) -> None:
        """Pass on what the tasks do, for all of them at once: every `FOLLOW` seconds one
        look at their journals (their heads, then the new records of those that moved, in
        one transaction), and every `STATUS_EVERY` looks one at the workflows' states
        (first, so that the records of a workflow found ended are all read): of those
        whose journal has the task settled, and every `ALL_EVERY` looks of all (a
        workflow may end without its loop: an error, DBOS's own cancellation)."""
        for tick in itertools.count():
            await trio.sleep(FOLLOW)
            live = [r for r in self._runs.values() if r.mirror is not None and not r.ended.is_set()]
            if not live:
                continue
            statuses: dict[str, Any] = {}
            every = tick % ALL_EVERY == 0
            asked = live if every else []
            if not every and tick % STATUS_EVERY == 0:
                asked = [r for r in live if _settled(r)]
            if asked:
                statuses = await self._db.call(_statuses, [r.workflow_id for r in asked])
            if tick % STATUS_EVERY == 0:
                await self._no_worker(live)
                await self._questions.look(self._session_id, self._port_of)
            after = {r.key: r.mirror.seq for r in live if r.mirror is not None}
            tail = functools.partial(self._store.session_tail, named_only=True)
            new = await self._db.call(tail, self._session_id, after)
            for run in live:
                assert run.mirror is not None
                if rows := new.get(run.key):
                    await self._pass_on(run, list(folded_rows(run.key, rows, run.mirror)))
                status = statuses.get(run.workflow_id)
                if status is not None and status.status in ENDED:
                    run.status = status
                    run.ended.set()

    def _port_of(self, task_id: str) -> TaskPort | None:
        run = self._runs.get(task_id)
        return None if run is None else run.port

    async def _no_worker(self, live: list[_Remote]) -> None:
        """Tasks queued (no worker has begun them: their journals have them pending)
        while no worker of this version is alive: said once."""
        queued = [r for r in live if not r.told_queued and _state(r) == "pending"]
        if not queued:
            return
        workers = await self._db.call(self._store.workers)
        alive = [
            w
            for w in workers
            if w.version == __version__ and not w.stopped and now_ms() - w.beat_ms < ALIVE * 1000
        ]
        if alive:
            return
        for run in queued:
            run.told_queued = True
        where = hide_password(self._url)
        names = ", ".join(r.task_id for r in queued)
        await self._tell(
            Notice(
                agent=ENGINE,
                message=f"{names} wait(s) on the queue: no worker of version {__version__} is "
                f"alive on {where}; start one: orchestrator worker --database-url URL",
            )
        )

    async def _pass_on(self, run: _Remote, records: list[tuple[int, Record]]) -> None:
        """The task's messages among `records` (seq, record: its journal's next, folded
        into its mirror), posted here under their own ids (once), and its state as its
        journal has it now."""
        await _show(run, records)
        task = run.port.state.tasks.get(run.task_id)
        counted = task.remote_seq if task is not None else 0
        used: dict[str, tuple[Usage, int]] = {}  # by model: tokens, calls
        into: set[str] = set()  # mail to the task that its journal has: acknowledged here
        for seq, record in records:
            if isinstance(record, MessagePosted) and record.agent == run.task_id:
                await run.port.mail.receive(record)
            elif isinstance(record, MessagePosted) and record.to == run.task_id:
                into.add(record.id)
            elif seq > counted and (cost := spent(record)) is not None:
                model, usage, calls = cost
                before, made = used.get(model, (Usage(), 0))
                used[model] = (before + usage, made + calls)
        upto = records[-1][0] if records else 0
        for model, (usage, calls) in used.items():
            await run.port.events.count(
                TaskUsed(
                    agent=run.task_id,
                    task=run.task_id,
                    model=model,
                    usage=usage,
                    calls=calls,
                    upto=upto,
                )
            )
        if into:
            await run.port.mail.deliver(run.task_id, only=into)
        assert run.mirror is not None
        await mirror_state(run.port, run.mirror, run.task_id)

    async def _forward(self, run: _Remote) -> None:
        """Send the mail to the task to its workflow, each message once a run (under the
        key `<workflow id>:<message id>`, so a session resumed that sends it again sends
        nothing). It is delivered here (the acknowledgement) when the follower finds it
        in the task's journal (`_pass_on`): mail sent to a run that ends before it
        receives it stays undelivered here, and goes to the task's next run."""
        encode = msgspec.json.Encoder().encode
        port, task_id = run.port, run.task_id
        while True:
            await port.mail.wait_for_mail(task_id, at_least="notify")
            waiting = [
                m for m in port.state.mailbox.undelivered(task_id) if m.message_id not in run.sent
            ]
            if not waiting:
                # All sent, not yet in the task's journal: look again after the follower.
                await trio.sleep(FOLLOW)
                continue
            lines = [
                (f"{run.workflow_id}:{mail.message_id}", encode(posted(mail)).decode())
                for mail in waiting
            ]
            await self._db.call(_send, run.workflow_id, lines)
            run.sent.update(mail.message_id for mail in waiting)

    async def _ended_badly(self, run: _Remote) -> None:
        """The workflow ended without the task's loop returning (an error of the worker,
        DBOS's own cancellation): the task fails, and its owner is told."""
        port, task_id, status = run.port, run.task_id, run.status
        task = port.state.tasks.get(task_id)
        if task is None or task.state in SETTLED:
            return
        # (The follower reads states without outputs: the error is read here, once.)
        error = await self._db.call(_error_of, run.workflow_id) or status.status
        reason = port.turns.redact(f"its run on a worker ended: {error}")
        await port.tasks.set_state(task_id, "failed", by=task_id, reason=reason)
        await port.mail.post(task_id, task.owner, task_id, "risk_alert", f"task failed: {reason}")


def _state(run: _Remote) -> str:
    """The task's state as its journal has it, as far as read."""
    assert run.mirror is not None
    task = run.mirror.tasks.tasks.get(run.task_id)
    return "" if task is None else task.state


def _settled(run: _Remote) -> bool:
    """Whether the task's journal has it settled: its workflow ends now, and its state
    is looked at every `STATUS_EVERY` looks, not only every `ALL_EVERY`."""
    return _state(run) in SETTLED


async def _show(run: _Remote, records: list[tuple[int, Record]]) -> None:
    """The task's turns, replies and calls among `records`, shown here (`TaskEvents`)."""
    for event in run.shown.of(records):
        await run.port.events.show(event)


def _error_of(workflow_id: str) -> str:
    """The error the workflow `workflow_id` ended with ("" for none); in a thread."""
    found = DBOS.list_workflows(workflow_ids=[workflow_id], load_input=False)
    return str(found[0].error) if found and found[0].error is not None else ""


def _statuses(workflow_ids: list[str]) -> dict[str, Any]:
    """The DBOS status of each of `workflow_ids` (in a thread)."""
    found = DBOS.list_workflows(workflow_ids=workflow_ids, load_input=False, load_output=False)
    return {w.workflow_id: w for w in found}


def _next_run(key: str) -> tuple[str, bool]:
    """The task's workflow to follow now and whether it is queued already (an open one,
    left by a session that stopped), else a new one, the next number; in a thread."""
    runs = task_workflows(key)
    if runs and runs[-1].status in OPEN:
        return runs[-1].workflow_id, True
    return next_workflow_id(key, runs), False


def _send(workflow_id: str, messages: list[tuple[str, str]]) -> None:
    """Messages (idempotency key, text) sent to the workflow `workflow_id`, in order; in
    a thread."""
    for key, message in messages:
        DBOS.send(workflow_id, message, MAIL, idempotency_key=key)


def _enqueue(workflow_id: str, key: str, traceparent: str) -> None:
    options: EnqueueOptions = {
        "workflow_name": WORKFLOW,
        "queue_name": QUEUE,
        "workflow_id": workflow_id,
        "app_version": __version__,
    }
    DBOS.enqueue_workflow_with_options(options, key, traceparent)
