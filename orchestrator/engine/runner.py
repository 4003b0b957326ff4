"""What the dbos engine's two runners share (`DbosRunner`, engine/dbos.py: each task a
workflow in this process; `RemoteRunner`, engine/remote.py: each task a workflow on
workers): the runner's life, written once.

- **start**: a task's run is made once (starting a task whose run is live is a no-op);
  the session's first task takes DBOS for this process and launches it, for the team's
  life;
- **follow**: each run waits for DBOS's launch, is carried by the runner's own part
  (`_work`), and ends the same way whatever happened: its slot freed, the team told
  (`TaskPort.task_ended`);
- **cancel**: a live run is handed to the runner's own cancellation;
- **close**: when the team ends, the runs still going are waited for, then DBOS is
  destroyed and let go.

Every call to the database goes through the engine's `Patience` (engine/retry.py): it
waits while the database cannot be reached, tells the session so, and gives up after
`patience` seconds. Beside it, the workflows of a task and their ids, which both
runners read.
"""

from __future__ import annotations

import abc
import contextlib
from typing import Generic, TypeVar

import trio
from dbos import DBOS, WorkflowStatus

from orchestrator.engine.launch import destroy, hold_dbos, launched, release_dbos
from orchestrator.engine.retry import Patience
from orchestrator.errors import ConfigError
from orchestrator.state.events import Notice
from orchestrator.team.port import TaskPort

OPEN = ("PENDING", "ENQUEUED", "DELAYED")  # a workflow's states before it has ended

R = TypeVar("R")  # a runner's own record of one task's run


class EngineRunner(abc.ABC, Generic[R]):
    """A `Runner` on the dbos engine, over the database at `url`; its kind says what is
    its own: a run's record (`_new_run`), DBOS's launch (`_launch`), how a run is
    followed to its end (`_work`) and cancelled (`_cancel_run`)."""

    kind = ""  # in the names of its trio tasks: `task t1 (KIND)`
    no_session = ""  # why a session without an id (not on disk) cannot run on it
    # Whether it takes DBOS for this process and launches it (a session's runner), or
    # runs where it is launched already (a task's children, on the worker that runs it).
    owns_dbos = True

    def __init__(self, nursery: trio.Nursery, *, url: str, patience: float) -> None:
        self._nursery = nursery
        self._url = url
        self._runs: dict[str, R] = {}
        self._threads = trio.CapacityLimiter(8)  # apart from trio's, which the journal uses
        # Every call to DBOS goes through it: it waits while the database is unreachable.
        self._db = Patience(self._tell, seconds=patience, limiter=self._threads)
        self._port: TaskPort | None = None  # to tell the session of an outage
        self._session_id = ""
        self._launched = trio.Event()
        self._idle = trio.Event()

    def start(self, task_id: str, port: TaskPort) -> None:
        if task_id in self._runs:
            return  # its run is live: starting it twice is a no-op
        if not self._session_id:
            self._port = port
            self._begin_session(port.session_id)
        self._runs[task_id] = self._new_run(task_id, port)
        self._idle = trio.Event()
        self._nursery.start_soon(self._run, task_id, port, name=f"task {task_id} ({self.kind})")

    def cancel(self, task_id: str) -> None:
        run = self._runs.get(task_id)
        if run is not None:
            self._cancel_run(run)

    @abc.abstractmethod
    def _new_run(self, task_id: str, port: TaskPort) -> R:
        """The record of the task's run, as it starts."""

    @abc.abstractmethod
    def _cancel_run(self, run: R) -> None:
        """The live `run` cancelled, as this kind cancels it."""

    @abc.abstractmethod
    def _launch(self) -> None:
        """DBOS configured and launched for this kind; in a worker thread."""

    @abc.abstractmethod
    async def _work(self, task_id: str, port: TaskPort, run: R) -> None:
        """The task's run, once DBOS is launched, until it has ended here."""

    def _session_begun(self) -> None:
        """What this kind starts beside the engine, once the session is known."""

    def _run_ended(self, task_id: str, run: R) -> None:
        """What this kind does as the run ends, before its slot is freed."""

    def _closing(self) -> None:
        """What this kind does as the engine's close begins (the team has ended)."""

    def _closed(self) -> None:
        """What this kind lets go of once DBOS is destroyed."""

    def _busy(self) -> bool:
        """Whether the close must wait (`_idle`): runs are left."""
        return bool(self._runs)

    def _begin_session(self, session_id: str) -> None:
        if not session_id:
            raise ConfigError(self.no_session)
        if self.owns_dbos:
            hold_dbos(self)
        self._session_id = session_id
        self._nursery.start_soon(self._db.run, name="dbos engine's notices")
        self._nursery.start_soon(self._engine, name="dbos engine")
        self._session_begun()

    async def _tell(self, notice: Notice) -> None:
        if self._port is not None:
            await self._port.events.tell(notice)

    async def _engine(self) -> None:
        """DBOS, launched for the team's life; destroyed once no run is left."""
        # DBOS's own waits for its database are told too (by its launcher's).
        with self._db.watch_dbos() if self.owns_dbos else contextlib.nullcontext():
            try:
                if self.owns_dbos:
                    await launched(self._db, self._url, self._launch)
                self._launched.set()
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    await self._db.flush()  # an outage given up on is said first
                    self._closing()
                    if self._busy():
                        await self._idle.wait()
                    await self._db.flush()  # and one found while the runs ended
                    if self._launched.is_set() and self.owns_dbos:
                        await destroy(self._db, self._threads)
                    self._closed()
                    if self.owns_dbos:
                        release_dbos(self)

    async def _run(self, task_id: str, port: TaskPort) -> None:
        run = self._runs[task_id]
        try:
            await self._launched.wait()
            await self._work(task_id, port, run)
        finally:
            self._run_ended(task_id, run)
            del self._runs[task_id]
            self._check_idle()
            await port.tasks.task_ended(task_id)

    def _check_idle(self) -> None:
        if not self._busy():
            self._idle.set()


def task_workflows(base: str) -> list[WorkflowStatus]:
    """The workflows of the task whose first is `base` (`<session>/<task>`), in order:
    `base`, `base/2`, ...; in a worker thread."""
    found = DBOS.list_workflows(workflow_id_prefix=base, load_input=False)
    numbered = [(n, w) for w in found if (n := _number(base, w.workflow_id))]
    return [w for _, w in sorted(numbered, key=lambda pair: pair[0])]


def next_workflow_id(base: str, runs: list[WorkflowStatus]) -> str:
    """The id of the task's workflow after `runs` (`task_workflows`)."""
    return base if not runs else f"{base}/{len(runs) + 1}"


def _number(base: str, workflow_id: str) -> int:
    """1 for `base`, N for `base/N`, 0 for another task's workflow (`base` a prefix)."""
    if workflow_id == base:
        return 1
    rest = workflow_id.removeprefix(base + "/")
    return int(rest) if rest != workflow_id and rest.isdigit() else 0
