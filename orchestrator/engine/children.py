"""A task on a worker delegates as a local task does (docs/engine.md, "Tasks on workers
delegate"): the runner of its team on the worker (`TaskTeamRunner`) runs the task itself
here, in this process (`run_on_worker`), and puts its children on the engine's queue, as a
session puts its own tasks (`ChildRunner`, the session's `RemoteRunner` on the worker's
DBOS).

So a child is a task on workers like any other: its own journal in the engine's database
(`<session id>/<child id>`, seeded from its parent's journal), its workflows
(`<session id>/<child id>[/n]`) taken by any worker, its mail through the database. Its
owner is its parent's team, which follows it as the session follows its tasks: the
child's messages posted in the parent's journal under their ids, its state mirrored
there, its model calls counted there (`task_usage`), which the session, following the
parent, counts in turn. Its id is its parent's with its own number (`t1.t1`, `t1.t2`;
`Seat.task_prefix`), so that it is unique in the session.

A parent whose worker dies is taken over by another worker: its team is opened again
over its journal, and `resume_children` follows again the children that journal has
live (their open workflows, never started twice), so the parent waiting on them goes on.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import trio

from orchestrator.engine.remote import RemoteRunner
from orchestrator.engine.store import Store
from orchestrator.state.tasks import SETTLED, RanOn
from orchestrator.team.main_agent import close_settled
from orchestrator.team.port import Runner, TaskPort
from orchestrator.team.runtime import Team
from orchestrator.team.subagent import InProcessRunner


class ChildRunner(RemoteRunner):
    """A task's children on the queue, from the worker that runs the task: DBOS is the
    worker's (launched, held and destroyed by it), its store too, and its patience with
    the database has no end (a worker has nobody to hand its work back to)."""

    kind = "child on workers"
    owns_dbos = False

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        store: Store,
        url: str,
        model: str,
        workspace: str,
        trace_parent: Callable[[str], str] | None = None,
    ) -> None:
        super().__init__(
            nursery,
            url=url,
            model=model,
            workspace=workspace,
            patience=math.inf,
            store=store,
            trace_parent=trace_parent,
        )

    def _launch(self) -> None:
        raise AssertionError("a task's children run on its worker's DBOS")


class TaskTeamRunner:
    """The `Runner` of the team of task `task_id` on a worker: the task here, on trio
    (`InProcessRunner`, as running `where`); any other task of the team (its children) on
    the queue, by the runner `children` makes, once the first is started."""

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        task_id: str,
        where: RanOn,
        children: Callable[[trio.Nursery], Runner],
    ) -> None:
        self._nursery = nursery
        self._task_id = task_id
        self._here = InProcessRunner(nursery, where=where)
        self._make_children = children
        self._children: Runner | None = None

    def start(self, task_id: str, port: TaskPort) -> None:
        self._runner(task_id).start(task_id, port)

    def cancel(self, task_id: str) -> None:
        if task_id == self._task_id:
            self._here.cancel(task_id)
        elif self._children is not None:
            self._children.cancel(task_id)

    def _runner(self, task_id: str) -> Runner:
        if task_id == self._task_id:
            return self._here
        if self._children is None:
            self._children = self._make_children(self._nursery)
        return self._children


async def resume_children(team: Team, task_id: str, *, cancelling: bool = False) -> None:
    """The children of `task_id` that its journal has live, followed again (a new run of
    the task, on this worker: the one before was lost, or had ended): those running or
    waiting for an answer are restarted (their workflows found open and followed, or
    started anew once ended), the pending and waiting ones started as the limits and
    their dependencies allow. Their own loops run elsewhere, and went on meanwhile.
    `cancelling` (the task is about to be cancelled): every live one is followed again
    at once, whatever its state, so that the cancellation reaches its workflow (one
    never queued is not queued then)."""
    for child in list(team.state.tasks.tasks.values()):
        if child.task_id == task_id or child.kind == "tool" or not child.live:
            continue
        if team.is_running(child.task_id):
            continue
        if cancelling or child.state not in ("pending", "waiting_deps"):
            team.restart(child.task_id)
    if not cancelling:
        await team.start_ready()


async def run_on_worker(team: Team, task_id: str, cancelled: bool) -> None:
    """Start the task (or go on with it, after a crash) and wait for its loop's end; a
    task its session cancelled before this worker took it is only cancelled."""
    task = team.state.tasks.tasks[task_id]
    if cancelled:  # (its children followed first, so that the cancellation reaches them)
        await resume_children(team, task_id, cancelling=True)
        await team.cancel(task.owner, task_id, "cancelled by its owner")
    elif task.state == "pending":
        team.queue(task_id)
    elif task.state not in SETTLED:
        team.restart(task_id)
    else:  # settled, its last call perhaps cut off by a kill: its context made whole
        await close_settled(team, task_id)
    if not cancelled and task.state not in SETTLED:
        await resume_children(team, task_id)  # (none on its first run)
    while True:
        if team.state.tasks.tasks[task_id].live:
            await team.changed.wait()
            continue
        await team.loops_ended()  # its last records written
        if not team.state.tasks.tasks[task_id].live:
            return
