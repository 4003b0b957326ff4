"""Delegated tasks as DBOS workflows: the runner of the `dbos` engine (docs/engine.md).

One delegated task = one workflow, named `<session id>/<task id>` (its later runs, after
it settled and was revived, `.../2`, `.../3`), whose one step is the task's whole loop.
Starting a task whose workflow is already recorded is no second run: a workflow left
open by a killed process is re-entered by its id (DBOS runs its step again), one whose
step had ended is only finished.

The loop itself runs on trio, in the team's nursery and the task's cancel scope, exactly
as the local runner runs it; the step, in a DBOS thread, calls into trio
(`trio.from_thread.run` with the loop's token) and returns when the loop has ended. So
the journal stays the truth: every side effect is journaled write-ahead by the turn
loop, and a step run again after a kill re-enters `run_task`, which resumes from the
journal (an interrupted call is reported as such, never run again silently).

Its start, the following of each run to its end, its cancellation and its close are
the two runners' (engine/runner.py): DBOS's sync API runs in worker threads only (never
on the trio thread), under a limiter of its own, each call through the engine's
`Patience` (retry.py). DBOS's executor is capped at `max_threads`. DBOS is one per
process, so one session at a time runs on this engine in a process; each process is an
executor of its own (its id names host and process), so DBOS never recovers another's
workflows by itself: the session's resume re-enters them, when its journal says the task
still runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import trio
from dbos import DBOS, SetWorkflowID, WorkflowHandle
from dbos._core import WorkflowHandlePolling

from orchestrator.engine.launch import executor_id, launch_dbos
from orchestrator.engine.retry import PATIENCE, EngineUnreachable
from orchestrator.engine.runner import OPEN, EngineRunner, next_workflow_id, task_workflows
from orchestrator.errors import OrchestratorError
from orchestrator.state.tasks import RanOn
from orchestrator.team import queries
from orchestrator.team.port import TaskPort
from orchestrator.team.subagent import work_task

WORKFLOW = "orchestrator.task"
LOOP_STEP = "orchestrator.task_loop"
FINISH_WAIT = 10.0  # seconds a run waits, once its loop ended, for the workflow's record
# (while the database answers: an outage adds up to the engine's patience)

# The runners by session id: DBOS calls a workflow by its name with its recorded
# arguments only, so the step finds the live session's runner here.
_RUNNERS: dict[str, DbosRunner] = {}


@DBOS.workflow(name=WORKFLOW)
def _task_workflow(session_id: str, task_id: str) -> str:
    return _task_loop(session_id, task_id)


@DBOS.step(name=LOOP_STEP)
def _task_loop(session_id: str, task_id: str) -> str:
    """The task's loop, run on trio; its outcome (the task's state, or `stopped`)."""
    runner = _RUNNERS.get(session_id)
    if runner is None:
        raise OrchestratorError(f"session {session_id} does not run in this process")
    workflow_id = DBOS.workflow_id or ""
    return trio.from_thread.run(runner.step, task_id, workflow_id, trio_token=runner.token)


@dataclass
class _Run:
    """One task's run on this engine: its workflow and the trio side of its step."""

    scope: trio.CancelScope = field(default_factory=trio.CancelScope)  # its loop's
    waiting: trio.CancelScope = field(default_factory=trio.CancelScope)  # for its step
    workflow_id: str = ""
    begun: trio.Event = field(default_factory=trio.Event)  # the step has called in
    ended: trio.Event = field(default_factory=trio.Event)  # the loop has returned
    outcome: str = "stopped"
    handle: WorkflowHandle[str] | None = None  # its workflow's, once started


@dataclass
class _Finish:
    """A task's workflow whose loop has ended, its end not recorded yet: the task has
    ended (its scheduler told), and this is waited for only before the task's next
    workflow starts, and when the engine closes."""

    # The wait, through the team's end too (bounded then by FINISH_WAIT).
    scope: trio.CancelScope = field(default_factory=lambda: trio.CancelScope(shield=True))
    done: trio.Event = field(default_factory=trio.Event)


class DbosRunner(EngineRunner[_Run]):
    """A `Runner` whose tasks are DBOS workflows in the database at `url`."""

    kind = "dbos"
    no_session = "the dbos engine runs the tasks of a session on disk only"

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        url: str,
        max_threads: int = 64,
        patience: float = PATIENCE,
    ) -> None:
        super().__init__(nursery, url=url, patience=patience)
        self._max_threads = max_threads
        self._finishing: dict[str, _Finish] = {}
        self._close_by = float("inf")  # from the engine's close: FINISH_WAIT more at most
        self.token = trio.lowlevel.current_trio_token()
        self.where = RanOn.here(executor_id())

    async def step(self, task_id: str, workflow_id: str) -> str:
        """The trio side of a task's step: let its loop run, and wait for its end."""
        run = self._runs.get(task_id)
        if run is None or run.workflow_id != workflow_id or run.ended.is_set():
            return "stopped"  # a stale workflow, or a run already gone: nothing to do
        run.begun.set()
        await run.ended.wait()
        return run.outcome

    def _new_run(self, task_id: str, port: TaskPort) -> _Run:
        return _Run()

    def _cancel_run(self, run: _Run) -> None:
        run.waiting.cancel()
        run.scope.cancel()

    def _session_begun(self) -> None:
        _RUNNERS[self._session_id] = self

    def _launch(self) -> None:
        launch_dbos(self._url, self.where.worker, max_threads=self._max_threads)
        DBOS.launch()

    def _closing(self) -> None:
        # The team ends (its work done, or Ctrl+C): a run waits for its workflow's end
        # FINISH_WAIT more at most, outage or not (a resume finishes a workflow left open).
        self._close_by = trio.current_time() + FINISH_WAIT
        for finish in self._finishing.values():
            finish.scope.deadline = min(finish.scope.deadline, self._close_by)

    def _closed(self) -> None:
        _RUNNERS.pop(self._session_id, None)

    def _busy(self) -> bool:
        return bool(self._runs or self._finishing)

    async def _work(self, task_id: str, port: TaskPort, run: _Run) -> None:
        earlier = self._finishing.get(task_id)
        if earlier is not None:
            await earlier.done.wait()  # its last workflow's end recorded first
        run.handle = await self._begin_run(task_id, port, run)
        with run.waiting:
            await run.begun.wait()  # at once for a new workflow; a recovered one is queued
        await work_task(port, task_id, run.scope, where=self.where)
        run.outcome = queries.task(port.state, task_id).state

    def _run_ended(self, task_id: str, run: _Run) -> None:
        run.ended.set()
        if run.handle is not None:
            # The task has ended; its workflow's end is recorded behind it.
            finish = self._finishing[task_id] = _Finish()
            finish.scope.deadline = self._close_by
            self._nursery.start_soon(self._finish, task_id, run.handle, finish)

    async def _begin_run(self, task_id: str, port: TaskPort, run: _Run) -> WorkflowHandle[str]:
        """The task's workflow started (or re-entered), its id in `run` before its step
        may call in. A task that never ran (no instance in the journal) is started as
        its first workflow without a look at the database: DBOS starts nothing for an id
        it has recorded (a process killed between the workflow's start and the task's,
        a task cancelled before its step called in), and then the look decides."""
        if not queries.task(port.state, task_id).instances:
            run.workflow_id = f"{self._session_id}/{task_id}"
            handle = await self._db.call(_begin, self._session_id, task_id, run.workflow_id, False)
            if not isinstance(handle, WorkflowHandlePolling):
                return handle
        run.workflow_id, resume = await self._db.call(_next_workflow, self._session_id, task_id)
        return await self._db.call(_begin, self._session_id, task_id, run.workflow_id, resume)

    async def _finish(self, task_id: str, handle: WorkflowHandle[str], finish: _Finish) -> None:
        """Wait for the workflow's recorded end. (An error of the workflow is no news: the
        journal holds the outcome.) The database unreachable past the engine's patience
        ends the team, as any call to DBOS does."""
        try:
            with finish.scope:
                try:
                    await self._db.call(handle.get_result, bound=FINISH_WAIT)
                except EngineUnreachable:
                    raise
                except Exception:
                    pass
        finally:
            finish.done.set()
            if self._finishing.get(task_id) is finish:
                del self._finishing[task_id]
            self._check_idle()


def _next_workflow(session_id: str, task_id: str) -> tuple[str, bool]:
    """The id of the task's workflow to run now, and whether it is one to re-enter (left
    open by a process that was killed); in a worker thread."""
    base = f"{session_id}/{task_id}"
    runs = task_workflows(base)
    if runs and runs[-1].status in OPEN:
        last = runs[-1].workflow_id
        if not _loop_ended(last):
            return last, True  # its step runs again here
        DBOS.resume_workflow(last).get_result()  # its loop had ended: only its record is left
    return next_workflow_id(base, runs), False


def _begin(session_id: str, task_id: str, workflow_id: str, resume: bool) -> WorkflowHandle[str]:
    """The task's workflow `workflow_id`, started or re-entered; in a worker thread."""
    if resume:
        return DBOS.resume_workflow(workflow_id)
    with SetWorkflowID(workflow_id):
        return DBOS.start_workflow(_task_workflow, session_id, task_id)


def _loop_ended(workflow_id: str) -> bool:
    return any(
        step["function_name"] == LOOP_STEP and step["error"] is None
        for step in DBOS.list_workflow_steps(workflow_id)
    )
