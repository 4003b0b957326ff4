"""The scheduler: task states and which task loops run. It journals each change of a
task's state, keeps the pending tasks in order, and starts them (through the runner)
while fewer than `max_live` run; it resumes tasks after a restart, revives settled ones,
and cancels a task's subtree.

What it keeps itself is runtime only: which loops run, which of them run again after a
restart, and the queue, rebuilt from the folded registry after a crash.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Callable, Iterator

import trio

from orchestrator.state.events import EventSink
from orchestrator.state.tasks import SETTLED, TaskChanged, TaskState, now_ms
from orchestrator.team import queries
from orchestrator.team.ids import free_id
from orchestrator.team.port import SessionLike
from orchestrator.team.postbox import Changes


class Scheduler:
    """Task states, the pending queue, and the task loops of one session. `launch`
    starts a task's loop (the runner's `start`), `stop` cancels it."""

    def __init__(
        self,
        session: SessionLike,
        sink: EventSink,
        changes: Changes,
        max_live: int,
        *,
        launch: Callable[[str], None],
        stop: Callable[[str], None],
    ) -> None:
        self._session = session
        self._sink = sink
        self._changes = changes
        self._max_live = max_live
        self._launch = launch
        self._stop = stop
        # Ids given to delegations whose records are still on their way to the fold.
        self._reserved: set[str] = set()
        self._started: set[str] = set()  # tasks whose loops run (or wait for mail)
        self._resumed: set[str] = set()  # of those, the ones live before a restart
        # Pending tasks in the order they became pending (queued for a live slot).
        self._queue: collections.deque[str] = collections.deque(
            t.task_id for t in session.state.tasks.tasks.values() if t.state == "pending"
        )
        self._loops_ended = trio.Event()

    @contextlib.contextmanager
    def new_task_id(self) -> Iterator[str]:
        """An id no task has: the first free one of the fold, past those other
        delegations hold while their records are on their way. Held for the block; a
        delegation that fails leaves no gap and no id taken (derived from the fold, not
        counted, so a failed call never moves it on)."""
        tasks = self._session.state.tasks.tasks
        with free_id("t", len(tasks) + 1, tasks, self._reserved) as task_id:
            yield task_id

    async def set_state(
        self, task_id: str, state: TaskState, *, by: str, reason: str = "", instance: str = ""
    ) -> None:
        # Not waited for on disk: whatever acts on the change (the task's loop, its owner's
        # next record) is journaled after it, so no journal holds one without the other,
        # and a side effect waits for its own durable start, which covers this too.
        await self._sink.emit(
            TaskChanged(
                agent=by, task=task_id, state=state, reason=reason, instance=instance, at=now_ms()
            )
        )
        self._changes.notify()

    def enqueue(self, task_id: str) -> None:
        """A task became pending (made, revived): start it when there is room."""
        self._queue.append(task_id)
        self.start_waiting()

    def start_waiting(self) -> None:
        """Start pending tasks, oldest first, while there is room under the live-subagent
        limit."""
        later: list[str] = []  # pending again while its old loop still ends (a retry)
        while self._queue and len(self._started) < self._max_live:
            task_id = self._queue.popleft()
            task = self._session.state.tasks.get(task_id)
            if task is None or task.state != "pending":
                continue
            if task_id in self._started:
                later.append(task_id)
                continue
            self._started.add(task_id)
            self._launch(task_id)
        self._queue.extendleft(reversed(later))

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
        """Run a settled task again over its own context (a follow-up, or a retry)."""
        task = queries.task(self._session.state, task_id)
        if task.state not in SETTLED:
            return
        await self.set_state(task_id, "pending", by=by, reason="revived")
        self.enqueue(task_id)

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

    def task_ended(self, task_id: str) -> None:
        """The runner's loop for `task_id` returned: make room for another."""
        self._started.discard(task_id)
        self.start_waiting()
        self._loops_ended.set()

    async def settled_loops_ended(self) -> None:
        """Wait until no settled task's loop still runs: it ends by itself, once its last
        records (such as its turn's end) are written. Loops of live tasks are not waited
        for."""
        while any(not queries.task(self._session.state, t).live for t in self._started):
            self._loops_ended = trio.Event()
            await self._loops_ended.wait()
