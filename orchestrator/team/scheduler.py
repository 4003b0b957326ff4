"""The scheduler: task states and which task loops run. It journals each change of a
task's state, keeps the pending tasks in order, and starts them (through the runner)
while fewer than `max_live` run (and, for a role with a limit of its own, fewer of that
role: `AgentDefinition.max_live`); it resumes tasks after a restart, revives settled ones,
and cancels a task's subtree.

It also keeps dependencies (`delegate(after=...)`): a task in `waiting_deps` becomes
`pending` by itself once its dependencies have completed (and, for a plan task, its write
scope is clear), and is cancelled when one of them fails or is cancelled, its owner told
by a `risk_alert` from it. It looks when a task completes (at once), when a task whose
loop runs fails or is cancelled (once its loop has ended: a failure may be retried), when
one without a loop settles, and after a restart (`check_waiting`). The registry's index of
dependants (`Registry.dependants`) keeps each look to the tasks concerned.

What it keeps itself is runtime only: which loops run, which of them run again after a
restart, and the queue, rebuilt from the folded registry after a crash.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Callable, Iterator
from typing import Protocol

import trio

from orchestrator.loop.deps import Verdict
from orchestrator.state.events import EventSink
from orchestrator.state.tasks import SETTLED, RanOn, TaskChanged, TaskRecord, TaskState, now_ms
from orchestrator.team import queries
from orchestrator.team.ids import free_id
from orchestrator.team.port import Runner, SessionLike, TaskPort
from orchestrator.team.postbox import Changes, Postbox


class Cancels(Protocol):
    """What stops a task's run: the runner, or the calls in the background."""

    def cancel(self, task_id: str) -> None: ...


class Scheduler:
    """Task states, the pending queue, and the task loops of one session. Task loops
    start once the team is whole (`run_with`): each is given the team's port, which
    holds this scheduler, so the port is made after it."""

    def __init__(
        self,
        session: SessionLike,
        sink: EventSink,
        changes: Changes,
        postbox: Postbox,
        max_live: int,
        *,
        role_limit: Callable[[str], int | None] = lambda role: None,
        prefix: str = "t",
    ) -> None:
        self._session = session
        self._sink = sink
        self._changes = changes
        self._postbox = postbox  # tells an owner its task was cancelled for a dependency
        self._max_live = max_live
        self._role_limit = role_limit  # an agent type's own limit on its live tasks
        self._prefix = prefix  # of its tasks' ids: `t` (`t1`), or a task's own (`t3.t`)
        self._runs: tuple[Runner, TaskPort] | None = None  # where loops run, given what
        self._calls: Cancels | None = None  # the calls in the background, if any run
        # Ids given to delegations whose records are still on their way to the fold.
        self._reserved: set[str] = set()
        self._started: set[str] = set()  # tasks whose loops run (or wait for mail)
        # Plan tasks whose dependencies are done, waiting out a scope conflict: looked at
        # whenever a task settles (the others, only when one of their dependencies does).
        self._scope_blocked: dict[str, None] = {}
        self._resumed: set[str] = set()  # of those, the ones live before a restart
        # Pending tasks in the order they became pending (queued for a live slot).
        # (A call in the background is no subagent: it never queues.)
        self._queue: collections.deque[str] = collections.deque(
            t.task_id
            for t in session.state.tasks.tasks.values()
            if t.state == "pending" and t.kind == "agent"
        )
        self._loops_ended = trio.Event()

    def run_with(self, runner: Runner, port: TaskPort, calls: Cancels | None = None) -> None:
        """Start task loops from now on on `runner`, each given `port`; `calls` stops a
        call in the background being cancelled (None: none runs)."""
        self._runs, self._calls = (runner, port), calls

    def _launch(self, task_id: str) -> None:
        assert self._runs is not None, "no task loop starts before run_with"
        runner, port = self._runs
        runner.start(task_id, port)

    def _stop(self, task_id: str) -> None:
        """Stop a task being cancelled: a call in the background, or a subagent."""
        task = self._session.state.tasks.get(task_id)
        if task is not None and task.kind == "tool":
            if self._calls is not None:
                self._calls.cancel(task_id)
        elif self._runs is not None:
            self._runs[0].cancel(task_id)

    @contextlib.contextmanager
    def new_task_id(self) -> Iterator[str]:
        """An id no task has: the first free one of the fold, past those other
        delegations hold while their records are on their way. Held for the block; a
        delegation that fails leaves no gap and no id taken (derived from the fold, not
        counted, so a failed call never moves it on). A task's own prefix (on a worker,
        whose team holds the task and its few children) numbers them from 1."""
        tasks = self._session.state.tasks.tasks
        start = len(tasks) + 1 if self._prefix == "t" else 1
        with free_id(self._prefix, start, tasks, self._reserved) as task_id:
            yield task_id

    async def set_state(
        self,
        task_id: str,
        state: TaskState,
        *,
        by: str,
        reason: str = "",
        instance: str = "",
        ran_on: RanOn | None = None,
    ) -> None:
        await self._set(task_id, state, by=by, reason=reason, instance=instance, ran_on=ran_on)
        # A completion starts the tasks waiting for it at once. A failure or cancellation
        # of a task whose loop runs waits for the loop's end (`task_ended`): a failure may
        # yet be retried.
        if state == "completed" or (state in SETTLED and task_id not in self._started):
            await self.settled(task_id)

    async def _set(
        self,
        task_id: str,
        state: TaskState,
        *,
        by: str,
        reason: str = "",
        instance: str = "",
        dependency: str = "",
        ran_on: RanOn | None = None,
    ) -> None:
        # Not waited for on disk: whatever acts on the change (the task's loop, its owner's
        # next record) is journaled after it, so no journal holds one without the other,
        # and a side effect waits for its own durable start, which covers this too.
        await self._sink.emit(
            TaskChanged(
                agent=by,
                task=task_id,
                state=state,
                reason=reason,
                instance=instance,
                dependency=dependency,
                at=now_ms(),
                ran_on=ran_on,
            )
        )
        self._changes.notify()

    def enqueue(self, task_id: str) -> None:
        """A task became pending (made, revived): start it when there is room."""
        self._queue.append(task_id)
        self.start_waiting()

    def start_waiting(self) -> None:
        """Start pending tasks, oldest first, while there is room under the live-subagent
        limit; a task whose role has no room left waits in its place, and younger tasks of
        other roles go first."""
        # Back in the queue, in order: a task pending again while its old loop still ends
        # (a retry), and those of roles at their own limit.
        back: list[str] = []
        full: set[str] = set()
        while self._queue and len(self._started) < self._max_live:
            task_id = self._queue.popleft()
            task = self._session.state.tasks.get(task_id)
            if task is None or task.state != "pending":
                continue
            if task_id in self._started:
                back.append(task_id)
                continue
            if task.agent_type in full or not self._role_has_room(task.agent_type):
                full.add(task.agent_type)
                back.append(task_id)
                continue
            self._started.add(task_id)
            self._launch(task_id)
        self._queue.extendleft(reversed(back))

    def _role_has_room(self, role: str) -> bool:
        limit = self._role_limit(role)
        if limit is None:
            return True
        tasks = self._session.state.tasks
        live = sum(1 for t in self._started if (r := tasks.get(t)) and r.agent_type == role)
        return live < limit

    def waits_for_role(self, task_id: str) -> bool:
        """Whether pending `task_id` waits because its role is at its own limit (not the
        session's)."""
        task = self._session.state.tasks.get(task_id)
        return (
            task is not None
            and len(self._started) < self._max_live
            and not self._role_has_room(task.agent_type)
        )

    def is_running(self, task_id: str) -> bool:
        return task_id in self._started

    def resume(self, task_id: str) -> None:
        """Run a task that was live when the session stopped (see main_agent)."""
        self._started.add(task_id)
        self._resumed.add(task_id)
        self._launch(task_id)

    def take_resumed(self, task_id: str) -> bool:
        """Whether the task's loop starts after a restart (asked once, by the loop)."""
        resumed = task_id in self._resumed
        self._resumed.discard(task_id)
        return resumed

    async def revive(self, task_id: str, *, by: str) -> None:
        """Run a settled task again over its own context (a follow-up, or a retry): at
        once, or once its dependencies have completed (`waiting_deps`)."""
        task = queries.task(self._session.state, task_id)
        if task.state not in SETTLED or task.kind == "tool":  # a call is never run again
            return
        verdict = self._verdict(task)
        if verdict.action == "start":
            await self._set(task_id, "pending", by=by, reason="revived")
            self.enqueue(task_id)
        elif verdict.action == "wait":
            await self._set(task_id, "waiting_deps", by=by, reason=f"revived; {verdict.reason}")
        else:  # it can never run: cancelled again, and its owner told why
            await self._doom(task, verdict)
            await self.settled(task_id)

    async def cancel(self, by: str, task_id: str, reason: str) -> list[str]:
        """Cancel a task and everything under it, deepest first."""
        cancelled = []
        for task in reversed(self._session.state.tasks.subtree(task_id)):
            if task.state in SETTLED:
                continue
            self._stop(task.task_id)
            await self.set_state(task.task_id, "cancelled", by=by, reason=reason)
            cancelled.append(task.task_id)
        return cancelled

    async def task_ended(self, task_id: str) -> None:
        """The runner's loop for `task_id` returned: make room for another; a task it
        left failed or cancelled settles its dependants now."""
        self._started.discard(task_id)
        self.start_waiting()
        self._loops_ended.set()
        task = self._session.state.tasks.get(task_id)
        if task is not None and task.state in ("failed", "cancelled"):
            await self.settled(task_id)

    # --- dependencies -------------------------------------------------------------------

    async def settled(self, task_id: str) -> None:
        """`task_id` completed, or failed or was cancelled for good: start the tasks
        waiting for it whose dependencies are now all completed, cancel (in turn) those
        that can never run, and look again at plan tasks waiting out a scope conflict."""
        tasks = self._session.state.tasks
        doomed = collections.deque([task_id])
        while doomed:
            for waiting in tasks.dependants(doomed.popleft()):
                if await self.check(waiting.task_id) == "cancel":
                    doomed.append(waiting.task_id)
            if doomed:
                continue
            for blocked in list(self._scope_blocked):
                if await self.check(blocked) == "cancel":
                    doomed.append(blocked)

    async def check(self, task_id: str) -> str:
        """Act on the verdict on one waiting task (`queries.readiness`): start it, cancel
        it, or leave it waiting. Returns the action taken ("" when it was not waiting)."""
        task = self._session.state.tasks.get(task_id)
        if task is None or task.state != "waiting_deps":
            self._scope_blocked.pop(task_id, None)
            return ""
        verdict = self._verdict(task)
        if verdict.action == "start":
            ready = "its dependencies are done" + (
                " and its write scope is clear" if task.serialise else ""
            )
            await self._set(task_id, "pending", by=queries.MAIN, reason=ready)
            self.enqueue(task_id)
        elif verdict.action == "cancel":
            await self._doom(task, verdict)
        return verdict.action

    def _verdict(self, task: TaskRecord) -> Verdict:
        verdict = queries.readiness(self._session.state, task)
        if verdict.action == "wait" and verdict.scope_only:
            self._scope_blocked[task.task_id] = None
        else:
            self._scope_blocked.pop(task.task_id, None)
        return verdict

    async def _doom(self, task: TaskRecord, verdict: Verdict) -> None:
        """Cancel a task that can never run, and tell its owner (`_tell_doomed`)."""
        await self._set(
            task.task_id,
            "cancelled",
            by=queries.MAIN,
            reason=verdict.reason,
            dependency=verdict.root,
        )
        await self._tell_doomed(task.task_id)

    async def _tell_doomed(self, task_id: str) -> None:
        """The owner learns that its task was cancelled for a dependency by a `risk_alert`
        from the task, once: the message's record is the task's latest from it, so the
        fold tells whether it was posted (`progress_seq` past `changed_seq`), and a
        restart between the two records posts it then (`check_waiting`)."""
        task = queries.task(self._session.state, task_id)
        if task.progress_seq > task.changed_seq:
            return
        summary = f"task cancelled: {task.reason}"
        data = {"dependency": task.dependency}
        await self._postbox.post(task_id, task.owner, task_id, "risk_alert", summary, data=data)

    async def check_waiting(self) -> None:
        """After a restart: act on every waiting task (its dependencies may have settled
        while the session was down, or just before it stopped), and tell the owners of
        tasks cancelled for a dependency just before the stop what they were not told."""
        tasks = self._session.state.tasks
        for task in list(tasks.tasks.values()):
            if task.state == "cancelled" and task.dependency:
                await self._tell_doomed(task.task_id)
        for task in tasks.waiting():
            if await self.check(task.task_id) == "cancel":
                await self.settled(task.task_id)

    async def settled_loops_ended(self) -> None:
        """Wait until no settled task's loop still runs: it ends by itself, once its last
        records (such as its turn's end) are written. Loops of live tasks are not waited
        for."""
        while any(not queries.task(self._session.state, t).live for t in self._started):
            self._loops_ended = trio.Event()
            await self._loops_ended.wait()
