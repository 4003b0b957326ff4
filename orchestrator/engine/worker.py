"""A worker of the dbos engine: a process that runs the delegated tasks sessions put on
the engine's queue (`orchestrator worker`; docs/engine.md).

A task run on a worker is one DBOS workflow, `<session id>/<task id>[/n]`, taken from the
queue by one worker. Its one step runs the task's loop here, on trio, in a team of its
own over the task's session in the database (`TaskSession`), so the loop, its write-ahead
records and its resume after a crash are the ones a session on disk has: a call cut off
by a kill is reported `interrupted` to the model, never run again silently.

Mail into the task comes from the database's inbox (put there by the owning session) and
is posted in the task's session under its own id, once. The worker beats (a row of its
own, every `beat` seconds) and looks at the others': one silent for `silent` seconds is
marked stopped by the first worker that sees it, which has DBOS recover its workflows
(they are queued again, and a worker takes each: its step runs again, and the task goes
on from its records).
"""

from __future__ import annotations

import functools
import math
import os
import threading
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import msgspec
import trio
from dbos import DBOS

from orchestrator._version import __version__
from orchestrator.engine.choice import hide_password
from orchestrator.engine.dbos import (
    destroy,
    executor_id,
    hold_dbos,
    launch_dbos,
    launched,
    release_dbos,
)
from orchestrator.engine.other_tasks import SessionTasks
from orchestrator.engine.retry import Patience
from orchestrator.engine.store import Run, Store
from orchestrator.engine.task_session import TaskSession
from orchestrator.errors import OrchestratorError
from orchestrator.state.events import EventSink, FanOut, Notice
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import MessagePosted
from orchestrator.state.tasks import SETTLED, RanOn, now_ms
from orchestrator.team.main_agent import open_team
from orchestrator.team.runtime import Team
from orchestrator.team.settings import TeamSettings
from orchestrator.team.subagent import InProcessRunner

QUEUE = "orchestrator_tasks"
WORKFLOW = "orchestrator.remote_task"
STEP = "orchestrator.remote_task_loop"
POLL = 0.2  # seconds between two looks at a running task's inbox and cancellation

SettingsFor = Callable[[Run, SessionState], Awaitable[TeamSettings]]
"""What a worker runs a task's team with, from the run and the task's folded state (the
worker's own config and environment: its models' keys never travel)."""

_SERVING: list[Worker] = []  # the process's worker: DBOS calls the step by name only


@DBOS.workflow(name=WORKFLOW)
def _remote_task(key: str) -> str:
    return _remote_loop(key)


@DBOS.step(name=STEP)
def _remote_loop(key: str) -> str:
    """The task's loop, on the worker's trio loop; its state when it stopped."""
    if not _SERVING:
        raise OrchestratorError("no worker serves in this process")
    worker = _SERVING[0]
    workflow_id = DBOS.workflow_id or ""
    try:
        return trio.from_thread.run(worker.work, workflow_id, trio_token=worker.token)
    except BaseException:
        if worker.stopping:
            # The worker stops (Ctrl+C) while the task runs: no outcome is recorded, so
            # its workflow stays open and another worker takes it over (the process
            # ends without this thread).
            threading.Event().wait()
        raise


def _queued_versions() -> dict[str, int]:
    """How many tasks wait on the queue, by the version of the session that queued them."""
    queued = DBOS.list_queued_workflows(
        queue_name=QUEUE, status="ENQUEUED", load_input=False, load_output=False
    )
    counts: dict[str, int] = {}
    for workflow in queued:
        version = workflow.app_version or ""
        counts[version] = counts.get(version, 0) + 1
    return counts


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
        ui: EventSink | None = None,
        say: Callable[[str], None] = print,
        patience: float = math.inf,
    ) -> None:
        self.url = url
        self.id = executor_id()  # its DBOS executor's: where its tasks ran
        self.token = trio.lowlevel.current_trio_token()
        self._settings_for = settings_for
        self._concurrency = concurrency
        self._beat = beat
        self._silent = silent
        self._ui = ui
        self._say = say
        self._store = Store(url)
        self._threads = trio.CapacityLimiter(8)
        self.stopping = False
        self.running: set[str] = set()  # the workflows of the tasks it runs
        # Every call to the database waits while it cannot be reached (engine/retry.py):
        # by default as long as it takes (a worker has nobody to hand its work back to).
        self._db = Patience(self._tell, seconds=patience, limiter=self._threads)
        self._teams: dict[str, _Running] = {}  # of those, the ones whose team runs
        self._versions_told: set[str] = set()
        # The other tasks of each session it runs tasks of, shared by their teams (and
        # gone with the last of them).
        self._sessions: weakref.WeakValueDictionary[str, SessionTasks] = (
            weakref.WeakValueDictionary()
        )

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run tasks until cancelled (Ctrl+C): DBOS launched, the queue listened to."""
        hold_dbos(self)
        _SERVING.append(self)
        try:
            async with trio.open_nursery() as notices:
                notices.start_soon(self._db.run)
                with self._db.watch_dbos():
                    await self._serve(task_status)
                notices.cancel_scope.cancel()
        finally:
            _SERVING.clear()
            release_dbos(self)

    async def _serve(self, task_status: trio.TaskStatus[None]) -> None:
        await launched(self._db, self.url, self._launch)
        try:
            await self._db.call(self._store.beat, self.id, __version__, os.getpid())
            where = hide_password(self.url)
            self._say(f"worker {self.id} (version {__version__}) takes tasks from {where}")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._keep_beating)
                nursery.start_soon(self._poll)
                task_status.started()
                await trio.sleep_forever()
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
            await self._db.call(self._store.beat, self.id, __version__, os.getpid())
            await self._recover_silent()

    async def _look_at_versions(self) -> None:
        """Tasks queued by sessions of another version are never this worker's (DBOS
        gives a worker only its own version's): said once per version."""
        queued = await self._db.call(_queued_versions)
        for version, count in queued.items():
            if version != __version__ and version not in self._versions_told:
                self._versions_told.add(version)
                self._say(
                    f"worker {self.id} runs version {__version__} and leaves the {count} "
                    f"queued task(s) of sessions of version {version} to workers of that version"
                )

    async def _recover_silent(self) -> None:
        """Workers silent too long: stopped, and their workflows queued again."""
        workers = await self._db.call(self._store.workers)
        silent_ms = round(self._silent * 1000)
        for other in workers:
            if other.worker_id == self.id or other.stopped:
                continue
            if now_ms() - other.beat_ms < silent_ms:
                continue
            if await self._db.call(self._store.claim_silent, other.worker_id, silent_ms):
                self._say(f"worker {other.worker_id} is silent: its tasks are queued again")
                await self._db.call(DBOS._recover_pending_workflows, [other.worker_id])

    async def work(self, workflow_id: str) -> str:
        """Run the task of `workflow_id` until it settles; its state then."""
        run = await self._db.call(self._store.run, workflow_id)
        if run is None:
            raise OrchestratorError(f"no run {workflow_id} in the engine's database")
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
        self.running.add(workflow_id)
        try:
            return await self._work(run)
        finally:
            self.running.discard(workflow_id)

    async def _work(self, run: Run) -> str:
        session = await TaskSession.load(self._store, run.task, self._db)
        task_id = run.task.rsplit("/", 1)[1]
        settings = await self._settings_for(run, session.state)
        settings.other_tasks = self._other_tasks(run)
        sink: EventSink = session if self._ui is None else FanOut([session, self._ui])
        runner = functools.partial(InProcessRunner, where=RanOn.here(self.id))
        async with open_team(session, sink, settings, runner=runner) as team:
            self._teams[run.workflow_id] = _Running(team, run, task_id)
            try:
                await _run_task(team, task_id)
            finally:
                del self._teams[run.workflow_id]
        return session.state.tasks.tasks[task_id].state

    def _other_tasks(self, run: Run) -> SessionTasks:
        """The tasks of `run`'s session, whose writes its shell commands must not take
        for its own (wherever they run: other workers, or teams of this one)."""
        session_id = run.task.rsplit("/", 1)[0]
        found = self._sessions.get(session_id)
        if found is None:
            found = self._sessions[session_id] = SessionTasks(self._store, session_id, self._db)
        return found

    async def _poll(self) -> None:
        """For all the tasks it runs at once: post the mail their sessions put for them
        (each message once), and cancel those their sessions cancelled. Another
        process's changes: nothing to wait on but the database."""
        decode = msgspec.json.Decoder(MessagePosted).decode
        while True:
            await trio.sleep(POLL)
            running = list(self._teams.values())
            if not running:
                continue
            seen = {r.run.task: r.seen for r in running}
            rows = await self._db.call(self._store.mail, seen)
            by_task = {r.run.task: r for r in running}
            for task, number, line in rows:
                found = by_task[task]
                await found.team.port.receive(decode(line))
                found.seen = number
            watched = [r.run.workflow_id for r in running if not r.cancelled]
            cancelled = await self._db.call(self._store.cancelled, watched)
            for found in running:
                if found.run.workflow_id in cancelled and not found.cancelled:
                    found.cancelled = True
                    owner = found.team.state.tasks.tasks[found.task_id].owner
                    await found.team.scheduler.cancel(
                        owner, found.task_id, "cancelled by its owner"
                    )


@dataclass
class _Running:
    """A task this worker runs: its team, and how far it has read the task's inbox."""

    team: Team
    run: Run
    task_id: str
    seen: int = 0
    cancelled: bool = False


async def _run_task(team: Team, task_id: str) -> None:
    """Start the task (or go on with it, after a crash) and wait for its loop's end."""
    task = team.state.tasks.tasks[task_id]
    if task.state == "pending":
        team.scheduler.enqueue(task_id)
    elif task.state not in SETTLED:
        team.scheduler.resume(task_id)
    while True:
        if team.state.tasks.tasks[task_id].live:
            await team.changed.wait()
            continue
        await team.scheduler.settled_loops_ended()  # its last records written
        if not team.state.tasks.tasks[task_id].live:
            return
