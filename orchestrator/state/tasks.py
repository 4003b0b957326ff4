"""The task registry: one durable record per delegated task, its records and its fold.

A task is created by `task_created` (journaled before its subagent starts) and changes
state only by `task_changed`; its latest progress and its completion envelope come from
the mailbox messages about it (`mailbox.MessagePosted`). The subagent working a task has
the task's id as its agent id, so its context is `state.agents[task_id]`, and reviving a
finished task gives it a new *instance* over the same context.

Records are folded (`TASK_FOLDS`, state/task_fold.py) into a `TaskRecord` per task, live
and on resume alike. `tasks/<id>.json` files are views of these records for people and tools; resume
never reads them.

A task of kind `tool` is a call running in the background (`shell` with
`background: true`; team/background.py): the same record in the same tree, owned by the
agent whose call started it, with its output in a file of the session, and no context of
its own. It is never counted for the live-subagent limit or for write-scope conflicts.
"""

import copy
import os
import time
from collections.abc import Collection, Iterable
from typing import Any, Literal

import msgspec

from orchestrator.eventbase import EventBase
from orchestrator.loop.scopes import in_scope as in_scope
from orchestrator.loop.scopes import scopes_overlap
from orchestrator.messages import Usage
from orchestrator.state.mailbox import Mail

TaskState = Literal[
    "waiting_deps",
    "pending",
    "running",
    "waiting_decision",
    "waiting_children",
    "completed",
    "failed",
    "cancelled",
]
ResumePolicy = Literal["auto", "ask", "never"]

SETTLED: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
"""States in which a task does no work until something revives it."""

LIVE: frozenset[str] = frozenset({"pending", "running", "waiting_decision", "waiting_children"})
"""States in which a task works or is about to: they count for the live-subagent limit
and for write-scope conflicts. `waiting_deps` (delegated, waiting for its dependencies or
for a scope conflict to clear) is neither live nor settled."""

CreatedState = Literal["pending", "waiting_deps"]
TaskKind = Literal["agent", "tool"]


def now_ms() -> int:
    return int(time.time() * 1000)


class TaskCreated(EventBase, frozen=True, tag="task_created"):
    """Record: `agent` delegated task `task`. Its prompt is not here: it is the first
    user message of the subagent's context (its `agent_started` record)."""

    task: str
    agent_type: str
    description: str
    owner_task: str = ""  # the owner's own task ("" when the owner is the main agent)
    depth: int = 1
    plan_ref: str = ""
    write_scope: tuple[str, ...] | None = None  # None: may write anywhere
    resume: ResumePolicy = "auto"
    ref: str = ""  # the delegating call's ref: a re-run of that call finds this task
    deadline: int = 0  # wall time (ms) by which it must settle, 0 for none
    round_budget: int = 0  # model calls its agent may make in all, 0 for no limit
    token_budget: int = 0  # tokens its agent may spend in all, 0 for no limit
    at: int = 0  # wall time, ms
    # Dependencies: it starts only once each of these has completed (`waiting_deps` until
    # then): tasks by id, and plan tasks by plan ref (the latest task with that plan_ref).
    after: tuple[str, ...] = ()
    after_plan: tuple[str, ...] = ()
    serialise: bool = False  # a plan task: it waits out a scope conflict, not refused
    state: CreatedState = "pending"  # `waiting_deps` when it must wait at once
    # `tool`: a call in the background, whose `agent_type` is its tool and `output` the
    # file (relative to the session's directory) its output goes to. (Not `kind`: every
    # record's `kind` is its tag.)
    task_kind: TaskKind = "agent"
    output: str = ""


class RanOn(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """Where a run of a task ran: the host, the process, and the engine's worker (a DBOS
    executor id; "" for the local engine, whose process is the session's). Said by the
    runner that runs the task, which may be a process on another host."""

    host: str
    pid: int
    worker: str = ""

    @classmethod
    def here(cls, worker: str = "") -> "RanOn":
        """This process, as the engine's `worker` (if any)."""
        import socket  # here, not above: reading a session (show) never needs it

        return cls(host=socket.gethostname(), pid=os.getpid(), worker=worker)


class TaskChanged(EventBase, frozen=True, tag="task_changed"):
    """Record: task `task` moved to `state` (because of `agent`, e.g. its owner cancelling
    it). Starting to run names the new instance, and where it runs (`ran_on`)."""

    task: str
    state: TaskState
    reason: str = ""
    instance: str = ""
    at: int = 0
    # Cancelled because a dependency failed or was cancelled: the task that did first
    # (the root of the cascade).
    dependency: str = ""
    ran_on: RanOn | None = None  # with a new instance: where that run runs


class TaskUsed(EventBase, frozen=True, tag="task_usage"):
    """Record: task `task`, run on a worker (engine/remote.py), made `calls` model calls of
    `model` that spent `usage`, as its journal in the engine's database says up to its
    record `upto`. Its owner's session counts them here (the budgets, the cost), once:
    `TaskRecord.remote_seq` says how far they are counted."""

    task: str
    model: str
    usage: Usage
    calls: int
    upto: int


TaskRecords = TaskCreated | TaskChanged | TaskUsed
"""The task registry's records; the journal's `Record` union is assembled from each
concept's (state/events.py)."""


class Envelope(msgspec.Struct, frozen=True, kw_only=True):
    """What a subagent hands back with `complete`."""

    summary: str
    files_changed: tuple[str, ...] = ()
    verification: tuple[str, ...] = ()
    risks: tuple[str, ...] = ()
    follow_ups: tuple[str, ...] = ()
    # Files the subagent really changed that the envelope does not list, and listed files
    # it did not change (checked by the session, not claimed by the model).
    unlisted_changes: tuple[str, ...] = ()
    unchanged_listed: tuple[str, ...] = ()
    # Files its tools changed outside its write scope (named in its risks, or it could
    # not complete).
    outside_scope: tuple[str, ...] = ()


class TaskRecord(msgspec.Struct, kw_only=True):
    """The durable task record: everything known about one delegated task (folded and
    snapshotted: a msgspec struct)."""

    task_id: str
    owner: str
    owner_task: str = ""
    depth: int = 1
    agent_type: str
    description: str
    plan_ref: str = ""
    write_scope: list[str] | None = None
    state: TaskState = "pending"
    resume: ResumePolicy = "auto"
    instances: list[str] = msgspec.field(default_factory=list)
    attempts: int = 1
    progress: str = ""
    percent: int | None = None
    progress_seq: int = 0  # when the latest progress (or any message) came from it
    completion: Envelope | None = None
    reason: str = ""  # why it failed, was cancelled or waits
    created: int = 0
    updated: int = 0
    created_seq: int = 0
    created_by: str = ""  # the ref of the call that delegated it
    deadline: int = 0  # wall time (ms) by which it must settle, 0 for none
    round_budget: int = 0  # model calls its agent may make in all, 0 for no limit
    token_budget: int = 0  # tokens its agent may spend in all, 0 for no limit
    changed_seq: int = 0  # the seq of its latest task_changed
    revived_seq: int = 0  # the seq of its latest revival (settled, then run again)
    after: list[str] = msgspec.field(default_factory=list)  # task ids it waits for
    after_plan: list[str] = msgspec.field(default_factory=list)  # plan refs it waits for
    serialise: bool = False  # a plan task: a scope conflict makes it wait, not refused
    dependency: str = ""  # cancelled because this dependency failed or was cancelled
    kind: TaskKind = "agent"  # `tool`: a call in the background (see the module)
    output: str = ""  # a tool task's output file, relative to the session's directory
    ran_on: RanOn | None = None  # where its latest run ran (None: not known, or never ran)
    # Run on workers: the record of its journal in the engine's database up to which its
    # model calls are counted in this session (`task_usage`).
    remote_seq: int = 0

    @property
    def live(self) -> bool:
        return self.state in LIVE

    @property
    def settled(self) -> bool:
        return self.state in SETTLED

    @property
    def read_only(self) -> bool:
        return self.write_scope == []


class Registry:
    """The task records of a session, folded from the journal. One record per task, kept
    for the session's life (a settled task can be revived, and its `plan_ref` found);
    indexes keep the queries that run on every delegation from walking every task."""

    def __init__(self) -> None:
        self.tasks: dict[str, TaskRecord] = {}
        self._refs: dict[tuple[str, str], str] = {}  # (owner, delegating ref) -> task id
        self._children: dict[str, list[str]] = {}  # owner -> its tasks, in creation order
        self._live: dict[str, None] = {}  # the live tasks
        self._waiting: dict[str, None] = {}  # the tasks in `waiting_deps`
        self._plan_refs: dict[str, str] = {}  # plan ref -> its latest task
        # Dependency -> the tasks that wait for it: by task id, and by plan ref.
        self._after: dict[str, list[str]] = {}
        self._after_plan: dict[str, list[str]] = {}

    def add(self, record: TaskRecord) -> None:
        self.tasks[record.task_id] = record
        self._children.setdefault(record.owner, []).append(record.task_id)
        if record.created_by:
            self._refs[record.owner, record.created_by] = record.task_id
        if record.plan_ref:
            self._plan_refs[record.plan_ref] = record.task_id
        for task_id in record.after:
            self._after.setdefault(task_id, []).append(record.task_id)
        for plan_ref in record.after_plan:
            self._after_plan.setdefault(plan_ref, []).append(record.task_id)
        self.changed(record)

    def changed(self, record: TaskRecord) -> None:
        """The fold changed `record`: its indexes follow."""
        if record.live:
            self._live[record.task_id] = None
        else:
            self._live.pop(record.task_id, None)
        if record.state == "waiting_deps":
            self._waiting[record.task_id] = None
        else:
            self._waiting.pop(record.task_id, None)

    def get(self, task_id: str) -> TaskRecord | None:
        return self.tasks.get(task_id)

    def live(self) -> list[TaskRecord]:
        """The live tasks, oldest first."""
        found = [self.tasks[t] for t in self._live]
        found.sort(key=lambda t: t.created_seq)
        return found

    def waiting(self) -> list[TaskRecord]:
        """The tasks waiting for their dependencies (`waiting_deps`), oldest first."""
        found = [self.tasks[t] for t in self._waiting]
        found.sort(key=lambda t: t.created_seq)
        return found

    def dependants(self, task_id: str) -> list[TaskRecord]:
        """The waiting tasks that wait for `task_id`, by its id or by its plan ref, oldest
        first (read from an index: no walk over every task)."""
        ids = list(self._after.get(task_id, ()))
        record = self.tasks.get(task_id)
        if record is not None and record.plan_ref:
            ids += self._after_plan.get(record.plan_ref, ())
        found = {t: self.tasks[t] for t in ids if t in self._waiting}
        return sorted(found.values(), key=lambda t: t.created_seq)

    def children(self, owner: str) -> list[TaskRecord]:
        """The tasks `owner` (an agent: `main` or a task id) delegated, oldest first."""
        return [self.tasks[t] for t in self._children.get(owner, ())]

    def subtree(self, task_id: str) -> list[TaskRecord]:
        """The task and every task under it, parents first."""
        found: list[TaskRecord] = []
        queue = [task_id]
        while queue:
            current = queue.pop(0)
            record = self.tasks.get(current)
            if record is not None:
                found.append(record)
            queue.extend(t.task_id for t in self.children(current))
        return found

    def by_call(self, owner: str, ref: str) -> TaskRecord | None:
        """The task that `owner`'s call `ref` delegated, if it ran before a crash."""
        task_id = self._refs.get((owner, ref)) if ref else None
        return None if task_id is None else self.tasks[task_id]

    def plan_refs(self) -> list[str]:
        """Every plan ref a task was delegated for, in the order they first were."""
        return list(self._plan_refs)

    def plan_state(self, plan_ref: str) -> str:
        """The state of the latest task delegated for `plan_ref`; "" when none was."""
        task = self.by_plan_ref(plan_ref)
        return task.state if task is not None else ""

    def by_plan_ref(self, plan_ref: str) -> TaskRecord | None:
        task_id = self._plan_refs.get(plan_ref) if plan_ref else None
        return None if task_id is None else self.tasks[task_id]

    def scope_conflict(
        self,
        scope: Collection[str] | None,
        *,
        exclude: Collection[str] = (),
        serialised: bool = True,
    ) -> TaskRecord | None:
        """A live task whose write scope overlaps `scope` (None: anywhere; empty: writes
        nothing and so conflicts with nothing). `serialised=False` leaves out the plan
        tasks that wait out a conflict (`serialise`)."""
        if scope is not None and not scope:
            return None
        for task in self.live():
            if task.task_id in exclude or task.read_only or task.kind == "tool":
                continue
            if not serialised and task.serialise:
                continue
            if scope is None or task.write_scope is None:
                return task
            if scopes_overlap(scope, task.write_scope):
                return task
        return None

    def note_message(self, seq: int, mail: Mail) -> None:
        """A mailbox message about a task (posted): a task's progress and its
        completion envelope are the latest such messages from it."""
        task = self.tasks.get(mail.task_id)
        if task is None or mail.sender != mail.task_id:
            return
        task.progress_seq = seq
        if mail.kind == "progress":
            task.progress = mail.summary
            data = mail.data or {}
            task.percent = data.get("percent", task.percent)
        elif mail.kind == "completed":
            task.completion = msgspec.convert(
                {**(mail.data or {}), "summary": mail.summary}, Envelope
            )
        self.changed(task)

    def dump(self) -> list[dict[str, Any]]:
        return [msgspec.to_builtins(t) for t in self.tasks.values()]

    @classmethod
    def load(cls, records: Iterable[TaskRecord]) -> "Registry":
        registry = cls()
        for record in records:
            registry.add(copy.deepcopy(record))
        return registry


def scope_within(inner: Iterable[str], outer: Iterable[str] | None) -> bool:
    """Whether every entry of `inner` lies inside `outer` (a child's scope in its
    parent's)."""
    return outer is None or all(in_scope(entry, outer) for entry in inner)
