"""A worker of the dbos engine: a process that runs the delegated tasks sessions put on
the engine's queue (`orchestrator worker`; docs/engine.md).

A task run on a worker is one DBOS workflow (workflow.py), taken from the queue by one
worker, which runs the task's loop here, on trio, in a team of its own over the task's
session in the database (`TaskSession`).

The worker beats (a row of its own, every `beat` seconds) and looks at the others': one
silent for `silent` seconds is marked stopped by the first worker that sees it, which
has DBOS recover its workflows (they are queued again, and a worker takes each: the
workflow runs again from its start, DBOS giving back what it had received, and the task
goes on from its records).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import signal
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import trio
from dbos import DBOS

from orchestrator._version import __version__
from orchestrator.engine.approvals import ask_the_session
from orchestrator.engine.children import ChildRunner, TaskTeamRunner, run_on_worker
from orchestrator.engine.launch import (
    destroy,
    executor_id,
    hold_dbos,
    launch_dbos,
    launched,
    release_dbos,
)
from orchestrator.engine.mail_watch import MailWatch
from orchestrator.engine.other_tasks import SessionTasks
from orchestrator.engine.retry import Patience
from orchestrator.engine.store import Run, Store, Taken
from orchestrator.engine.task_session import TaskSession
from orchestrator.engine.together import TaskCalls
from orchestrator.engine.urls import hide_password
from orchestrator.engine.workflow import CANCEL, MAIL, QUEUE, SERVING, queued_versions
from orchestrator.errors import OrchestratorError
from orchestrator.session.shown import duration
from orchestrator.state.events import EventSink, FanOut, Notice
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import MessagePosted
from orchestrator.state.settings import SessionSettings
from orchestrator.state.tasks import RanOn, now_ms
from orchestrator.team.main_agent import open_team
from orchestrator.team.runtime import Team
from orchestrator.team.settings import RunSettings, Seat
from orchestrator.tools.workspace import Workspace

SettingsFor = Callable[[Run, SessionState, str], Awaitable[RunSettings]]
"""What a worker runs a task's team with, from the run, the task's folded state and its
workflow's `traceparent` ("" when its session is not traced, else for its shell commands'
`TRACEPARENT`): the worker's own config and environment (its models' keys never travel)."""
TraceTask = Callable[
    [str, str, list[tuple[int, bytes]]], AbstractAsyncContextManager[EventSink | None]
]
"""The sink that traces a task here, from its key, its workflow's `traceparent` and its
journal so far (tracing/task.py; None: not traced)."""

OpenFor = Callable[[Run, TaskSession, RunSettings], AbstractAsyncContextManager[RunSettings]]
"""What a task's team runs with for the time of its loop, made of its settings (the
worker's MCP servers started for that time and their tools added: cli/worker.py)."""


@contextlib.asynccontextmanager
async def as_they_are(
    run: Run, session: TaskSession, settings: RunSettings
) -> AsyncIterator[RunSettings]:
    yield settings


class Worker:
    """Takes tasks from the queue of the database at `url` and runs them, at most
    `concurrency` at once."""

    def __init__(
        self,
        url: str,
        settings_for: SettingsFor,
        *,
        concurrency: int = 8,
        beat: float = 5.0,
        silent: float = 30.0,
        ask_session: bool = False,
        ui: EventSink | None = None,
        say: Callable[[str], None] = print,
        patience: float = math.inf,
        status_every: float = 60.0,
        trace: TraceTask | None = None,
        open_for: OpenFor = as_they_are,
    ) -> None:
        self.url = url
        self._open_for = open_for
        self.id = executor_id()  # its DBOS executor's: where its tasks ran
        self.token = trio.lowlevel.current_trio_token()
        self._settings_for = settings_for
        self._concurrency = concurrency
        self._beat = beat
        self._silent = silent
        self._ask_session = ask_session  # a call the rules ask about: to the task's session
        self._ui = ui
        self._trace = trace  # (None: this worker traces nothing)
        self._say = say
        self._status_every = status_every
        self._last_beat_ms = 0
        self._store = Store(url)
        self._threads = trio.CapacityLimiter(8)
        self.stopping = False
        self.running: set[str] = set()  # the workflows of the tasks it runs
        # Every call to the database waits while it cannot be reached (engine/retry.py):
        # by default as long as it takes (a worker has nobody to hand its work back to).
        self._db = Patience(self._tell, seconds=patience, limiter=self._threads)
        mailed = functools.partial(self._store.mailed, topic=MAIL)
        self._mail = MailWatch(functools.partial(self._db.call, mailed))
        self._group = TaskCalls(self._store, self._db)  # its tasks' journals, together
        self._tasks: dict[str, _Running] = {}  # by workflow, those whose workflow runs here
        self._nursery: trio.Nursery | None = None  # where their loops run
        self._versions_told: set[str] = set()
        # The other tasks of each session it runs tasks of, shared by their teams (and
        # gone with the last of them).
        self._sessions: weakref.WeakValueDictionary[str, SessionTasks] = (
            weakref.WeakValueDictionary()
        )

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run tasks until cancelled (Ctrl+C): DBOS launched, the queue listened to."""
        hold_dbos(self)
        SERVING.append(self)
        try:
            async with trio.open_nursery() as notices:
                notices.start_soon(self._db.run)
                with self._db.watch_dbos():
                    await self._serve(task_status)
                notices.cancel_scope.cancel()
        finally:
            SERVING.clear()
            release_dbos(self)

    async def _serve(self, task_status: trio.TaskStatus[None]) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await self._db.call(self._store.check_format)  # a newer one's: refused
                await launched(self._db, self.url, self._launch)
                await self._beat_now()
                where = hide_password(self.url)
                self._say(f"worker {self.id} (version {__version__}) takes tasks from {where}")
                nursery.start_soon(self._keep_beating)
                nursery.start_soon(self._keep_telling)
                nursery.start_soon(self._mail.run)
                task_status.started()
                try:
                    await trio.sleep_forever()
                except BaseException:
                    self.stopping = True  # before the tasks' loops are cancelled
                    raise
        except BaseException:
            self.stopping = True
            raise
        finally:
            with trio.CancelScope(shield=True):
                await self._stop()

    async def _stop(self) -> None:
        """Stopped with no task running: said so in the database (nobody takes anything
        over). With tasks running: as if killed (their workflows stay open, and the
        worker that finds this one silent takes them over); the process must end
        without waiting for their threads."""
        if self.running:
            self._say(
                f"stopped with {len(self.running)} task(s) running: another worker takes "
                f"them over once it finds this one silent ({self._silent:g} s)"
            )
            return
        stopped = functools.partial(self._store.beat, stopped=True)
        await self._db.call(stopped, self.id, __version__, os.getpid())
        await destroy(self._db, self._threads)
        self._store.close()

    async def _tell(self, notice: Notice) -> None:
        self._say(f"worker {self.id}: {notice.message}")

    def _launch(self) -> None:
        launch_dbos(self.url, self.id, max_threads=self._concurrency + 8)
        DBOS.launch()
        DBOS.register_queue(QUEUE, worker_concurrency=self._concurrency, polling_interval_sec=0.2)

    async def _keep_beating(self) -> None:
        while True:
            await self._look_at_versions()
            await trio.sleep(self._beat)
            await self._beat_now()
            await self._recover_silent()

    async def _beat_now(self) -> None:
        await self._db.call(self._store.beat, self.id, __version__, os.getpid())
        self._last_beat_ms = now_ms()

    async def _keep_telling(self) -> None:
        """What it runs, said every `status_every` seconds and at once on SIGUSR1."""
        with trio.open_signal_receiver(signal.SIGUSR1) as asked:
            while True:
                with trio.move_on_after(self._status_every):
                    await asked.__anext__()
                self._say(self.status())

    def status(self) -> str:
        """One line: the tasks it runs (their sessions, for how long) and its last beat."""
        now = now_ms()
        tasks = sorted(self._tasks.values(), key=lambda r: r.started_ms)
        running = ", ".join(
            f"{r.run.task} for {duration((now - r.started_ms) / 1000)}"
            for r in tasks
            if not r.ended.is_set()
        )
        doing = f"runs {running}" if running else "runs no task"
        beat = duration((now - self._last_beat_ms) / 1000) if self._last_beat_ms else "never"
        return f"worker {self.id}: {doing}; last beat {beat} ago"

    async def _look_at_versions(self) -> None:
        """Tasks queued by sessions of another version are never this worker's (DBOS
        gives a worker only its own version's): said once per version."""
        queued = await self._db.call(queued_versions)
        for version, count in queued.items():
            if version != __version__ and version not in self._versions_told:
                self._versions_told.add(version)
                self._say(
                    f"worker {self.id} runs version {__version__} and leaves the {count} "
                    f"queued task(s) of sessions of version {version} to workers of that version"
                )

    async def _recover_silent(self) -> None:
        """Workers silent too long: their workflows queued again, then marked stopped.
        In that order: a worker killed between the two leaves the silent one unmarked,
        so the next worker to look queues its workflows again (DBOS re-enqueues them for
        its queue's atomic dequeue, so a second recovery runs nothing twice). Marked
        first, a claimer killed before it recovered left them pending for ever."""
        workers = await self._db.call(self._store.workers)
        silent_ms = round(self._silent * 1000)
        for other in workers:
            if other.worker_id == self.id or other.stopped:
                continue
            if now_ms() - other.beat_ms < silent_ms:
                continue
            await self._db.call(DBOS._recover_pending_workflows, [other.worker_id])
            if await self._db.call(self._store.claim_silent, other.worker_id, silent_ms):
                self._say(f"worker {other.worker_id} is silent: its tasks are queued again")

    async def begin(self, workflow_id: str, traceparent: str = "") -> int:
        """The task of `workflow_id` running here: its loop started (on a first run, or
        the first time a recovered workflow runs here) in a team opened over its journal,
        unless it runs here already; how many messages DBOS recorded its workflow
        receiving (a workflow run again receives those again first). Its run, of another
        version, or its workspace out of reach: raised (its workflow ends in error)."""
        taken = await self._group.run(workflow_id)  # (with the others taken at once)
        if taken is None:
            raise OrchestratorError(f"no run {workflow_id} in the engine's database")
        if workflow_id in self._tasks:
            return taken.received
        run = taken.run
        if run.version != __version__:
            raise OrchestratorError(
                f"task {run.task} belongs to a session of version {run.version}; worker "
                f"{self.id} runs version {__version__} and does not take it"
            )
        if not await trio.Path(run.workspace).is_dir():
            raise OrchestratorError(
                f"the workspace {run.workspace} is not reachable from worker {self.id}: "
                "a task on workers needs a path every worker reaches (a shared file system)"
            )
        assert self._nursery is not None
        await self._nursery.start(self._run, taken, traceparent)
        return taken.received

    async def _run(
        self, taken: Taken, traceparent: str, *, task_status: trio.TaskStatus[None]
    ) -> None:
        """The task's loop, started (`task_status` once its team is open: a failure before
        is `begin`'s), until it ends; then its workflow is woken. Cancelled (the worker
        stops), it leaves no outcome: its workflow is taken over elsewhere."""
        run = taken.run
        running = self._tasks[run.workflow_id] = _Running(run, run.task.rsplit("/", 1)[1])
        self.running.add(run.workflow_id)
        try:
            running.state = await self._work(
                run, running, taken.cancelled, traceparent, task_status
            )
        except Exception as exc:
            if running.team is None:  # its start failed: `begin` raises it
                del self._tasks[run.workflow_id]
                self.running.discard(run.workflow_id)
                raise
            running.error = exc
        if running.scope.cancelled_caught:
            return  # its workflow has ended (`forget`): nothing to wake
        self.running.discard(run.workflow_id)
        running.ended.set()  # (its workflow's wait ends)

    async def _work(
        self,
        run: Run,
        running: _Running,
        cancelled: bool,
        traceparent: str,
        started: trio.TaskStatus[None],
    ) -> str:
        rows = await self._group.records(run.task)  # (read once: the trace's too)
        session = TaskSession.of_rows(self._store, run.task, rows, self._db, self._group)
        task_id = run.task.rsplit("/", 1)[1]
        settings = await self._settings_for(run, session.state, traceparent)
        if self._ask_session:
            asked = ask_the_session(self._store, self._db, run.task)
            settings = dataclasses.replace(settings, approve_for=asked)
        seat = Seat(
            workspace=Workspace(Path(run.workspace)),
            settings=session.state.settings or SessionSettings(),
            session_id=run.task.rsplit("/", 1)[0],
            mail_prefix=f"{task_id}.m",  # its messages keep their ids in the session
            task_prefix=f"{task_id}.t",  # and its children theirs (engine/children.py)
            other_tasks=self._other_tasks(run),
        )
        traced: AbstractAsyncContextManager[EventSink | None] = nullcontext()
        if self._trace is not None and traceparent:
            traced = self._trace(run.task, traceparent, rows)
        children = functools.partial(
            ChildRunner,
            store=self._store,
            url=self.url,
            model=run.model,
            workspace=run.workspace,
            trace_parent=(lambda ref: traceparent) if traceparent else None,  # (its trace)
        )
        runner = functools.partial(
            TaskTeamRunner, task_id=task_id, where=RanOn.here(self.id), children=children
        )
        async with (
            session.writing(),
            traced as tracer,
            self._open_for(run, session, settings) as settings,
            open_team(session, self._sink(session, tracer), settings, seat, runner=runner) as team,
        ):
            running.team, running.session = team, session
            started.started()
            with running.scope:
                await run_on_worker(team, task_id, cancelled)
        return session.state.tasks.tasks[task_id].state

    def _sink(self, session: TaskSession, tracer: EventSink | None) -> EventSink:
        """The task's: its journal, then the worker's log and the task's trace."""
        watchers = [sink for sink in (self._ui, tracer) if sink is not None]
        return FanOut([session, *watchers]) if watchers else session

    async def wait(self, workflow_id: str) -> str:
        """Until the loop of the task of `workflow_id` has ended (the task's state, or
        the loop's error raised) or mail waits for it in DBOS ("")."""
        running = self._tasks[workflow_id]
        if await self._mail.wait(workflow_id, running.ended):
            return ""
        if running.error is not None:
            raise running.error
        return running.state

    async def hand_over(self, workflow_id: str, message: str | None) -> None:
        """What the workflow of a task running here received, handed to it: mail posted
        in its journal (once: by its id), a cancellation done. Once its loop has ended,
        mail is not posted: it stays the session's."""
        running = self._tasks[workflow_id]
        if running.ended.is_set():
            return
        assert running.team is not None
        assert running.session is not None
        if message == CANCEL:
            owner = running.team.state.tasks.tasks[running.task_id].owner
            await running.team.cancel(owner, running.task_id, "cancelled by its owner")
        elif message is not None:
            await running.team.port.mail.receive(_decode(message))
        await running.session.flush()  # in the database before the step's output is

    async def forget(self, workflow_id: str) -> None:
        """The workflow of `workflow_id` has ended here (or failed). Its task's loop
        still running (the workflow failed before the loop's end: an error of DBOS's in
        a `recv` or a step, DBOS's own cancellation) is stopped."""
        running = self._tasks.pop(workflow_id, None)
        if running is not None and not running.ended.is_set():
            running.scope.cancel()
            self.running.discard(workflow_id)

    def _other_tasks(self, run: Run) -> SessionTasks:
        """The tasks of `run`'s session, whose writes its shell commands must not take
        for its own (wherever they run: other workers, or teams of this one)."""
        session_id = run.task.rsplit("/", 1)[0]
        found = self._sessions.get(session_id)
        if found is None:
            found = self._sessions[session_id] = SessionTasks(self._store, session_id, self._db)
        return found


_decode = msgspec.json.Decoder(MessagePosted).decode


@dataclass
class _Running:
    """A task whose workflow runs on this worker: its team while its loop runs, and how
    the loop ended."""

    run: Run
    task_id: str
    started_ms: int = field(default_factory=now_ms)  # when it began running here
    team: Team | None = None
    session: TaskSession | None = None  # its journal, while its loop runs
    ended: trio.Event = field(default_factory=trio.Event)  # its loop's end
    state: str = ""  # the task's, once its loop has ended
    error: Exception | None = None  # the loop's, when it failed
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)  # its wait for it
