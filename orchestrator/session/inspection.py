"""A finished (or stopped, or running) session, inspected: `session_report` reads the one
report of a session (session/report.py, what `orchestrator sessions show` prints) and
gives it as a `SessionReport`, a typed view of the same data, with `text()` and
`to_json()` exactly what the command prints."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from orchestrator.loop.compaction import Method, Reason
from orchestrator.loop.todos import TodoItem, TodoList
from orchestrator.messages import Usage
from orchestrator.session.on_workers import WorkersReader
from orchestrator.session.report import Windows, read_report
from orchestrator.session.report_text import report_json, report_text
from orchestrator.session.status import ShownStatus
from orchestrator.state.mailbox import Mail
from orchestrator.state.settings import SessionSettings
from orchestrator.state.tasks import TaskRecord
from orchestrator.store.ids import session_dir

if TYPE_CHECKING:
    from orchestrator.prices.cost import Price


class Totals(msgspec.Struct, frozen=True):
    """The usage of some model calls and what they cost: `cost_usd` None when none of
    them had a price, a lower bound when `unpriced_calls` is not 0."""

    calls: int
    usage: Usage
    cost_usd: float | None
    unpriced_calls: int


class Ledger(msgspec.Struct, frozen=True):
    """Usage and cost for the session, per agent, per model, and per task subtree (a
    task's own calls and its descendants')."""

    session: Totals
    by_agent: dict[str, Totals]
    by_model: dict[str, Totals]
    by_subtree: dict[str, Totals]


class WindowFigures(msgspec.Struct, frozen=True):
    context: int
    output: int
    usable: int


class BreakerState(msgspec.Struct, frozen=True):
    failures: int
    paused_until: int
    paused: bool


class AgentReport(msgspec.Struct, frozen=True):
    """One agent: its live context (`messages`, `tokens`, the share of its model's
    window when known), its model calls and the usage its context recorded, its
    compactions and the breaker that may pause them."""

    role: str
    messages: int
    model_calls: int
    turn_open: bool
    usage: Usage
    model: str
    tokens: int
    window: WindowFigures | None
    window_share: float | None
    compactions: int
    summary_calls: int
    breaker: BreakerState


class Verdict(msgspec.Struct, frozen=True):
    seq: int
    agent: str
    action: str
    reasons: tuple[str, ...]


class Compaction(msgspec.Struct, frozen=True):
    seq: int
    agent: str
    reason: Reason
    method: Method
    before: int
    after: int
    pruned: int
    dropped: int
    attempts: int
    summary_chars: int
    model: str


class PlanStep(msgspec.Struct, frozen=True):
    """A task of the plan shown: the task delegated for it, its state, its todo's status."""

    id: str
    title: str
    depends_on: tuple[str, ...]
    task: str
    state: str
    todo: str


class PlanVersionLine(msgspec.Struct, frozen=True):
    version: int
    source: str
    decision: str
    by: str
    feedback: str
    tasks: int


class PlanReport(msgspec.Struct, frozen=True):
    """The plan being built (else the latest), its decision, and every version."""

    version: int
    decision: str
    awaiting: int | None
    goal: str
    versions: tuple[PlanVersionLine, ...]
    tasks: tuple[PlanStep, ...]


class JournalEvent(msgspec.Struct, frozen=True):
    seq: int
    time: float
    kind: str
    agent: str


class OnWorkers(msgspec.Struct, frozen=True):
    """Where the records of a session's tasks on workers were read (`database`, its
    password hidden), the tasks read, and why any were not (`unread`, "" when all were)."""

    database: str
    tasks: tuple[str, ...]
    unread: str


@dataclass(frozen=True)
class TaskNode:
    """A task of the tree, its subtasks, and the usage of its subtree."""

    task: TaskRecord
    children: tuple[TaskNode, ...]
    usage: Totals


class PendingApproval(msgspec.Struct, frozen=True, kw_only=True):
    """A call parked for a person's decision, as `sessions show` lists it."""

    id: str  # the key of `resume(..., approvals=...)` and `resume --approve-call`
    agent: str
    who: str
    tool: str
    command: str | None  # a shell call's exact command
    arguments: str  # the call's raw JSON arguments


@dataclass(frozen=True)
class SessionReport:
    """The report of one session: a typed view of `data`, the plain data that `sessions
    show --json` prints; `text()` is what `sessions show` prints."""

    data: dict[str, Any] = field(repr=False)
    id: str
    directory: Path
    goal: str
    model: str
    workspace: str
    created: datetime
    updated: datetime
    status: ShownStatus
    resumable: bool
    reason: str
    settings: SessionSettings | None
    journal_records: int
    agents: dict[str, AgentReport]
    usage: Ledger
    cache_share: float | None
    tasks: dict[str, TaskRecord]
    task_tree: tuple[TaskNode, ...]
    mail: tuple[Mail, ...]
    todos: dict[str, TodoList]
    assessments: tuple[Verdict, ...]
    compactions: tuple[Compaction, ...]
    plan: PlanReport | None
    last_events: tuple[JournalEvent, ...]
    warnings: tuple[str, ...]
    on_workers: OnWorkers | None  # None: its tasks ran in its own process
    # The main agent's answer as of its last turn's end (the manifest's `output`), and
    # the calls parked for a person's decision (`resume --approve-call ID`).
    output: str = ""
    approvals: tuple[PendingApproval, ...] = ()

    @classmethod
    def of(cls, data: dict[str, Any], directory: Path) -> SessionReport:
        """The typed view of a report's `data` (`report.describe`'s)."""

        def typed(key: str, kind: Any) -> Any:
            return msgspec.convert(data[key], kind)

        usage = typed("usage", Ledger)
        tasks = {task.task_id: task for task in typed("tasks", list[TaskRecord])}
        return cls(
            data=data,
            id=data["id"],
            directory=directory,
            goal=data["goal"],
            model=data["model"],
            workspace=data["workspace"],
            created=datetime.fromisoformat(data["created"]),
            updated=datetime.fromisoformat(data["updated"]),
            status=data["status"],
            resumable=data["resumable"],
            reason=data["reason"],
            settings=typed("settings", SessionSettings | None),
            journal_records=data["journal_records"],
            agents=typed("agents", dict[str, AgentReport]),
            usage=usage,
            cache_share=data["cache_share"],
            tasks=tasks,
            task_tree=_tree(tasks, usage.by_subtree),
            mail=typed("mailbox", tuple[Mail, ...]),
            todos={agent: _todo_list(view) for agent, view in data["todos"].items()},
            assessments=typed("assessments", tuple[Verdict, ...]),
            compactions=typed("compactions", tuple[Compaction, ...]),
            plan=typed("plan", PlanReport | None),
            last_events=typed("last_events", tuple[JournalEvent, ...]),
            warnings=tuple(data["warnings"]),
            on_workers=typed("on_workers", OnWorkers | None),
            output=data.get("output", ""),
            approvals=typed("approvals", tuple[PendingApproval, ...]),
        )

    def text(self) -> str:
        """What `orchestrator sessions show ID` prints."""
        return report_text(self.data)

    def to_json(self) -> str:
        """What `orchestrator sessions show ID --json` prints."""
        return report_json(self.data)

    def __str__(self) -> str:
        return self.text()


def _tree(tasks: Mapping[str, TaskRecord], subtrees: Mapping[str, Totals]) -> tuple[TaskNode, ...]:
    """The tasks as a tree: the roots are those whose owner is no task (the main agent's)."""
    children: dict[str, list[TaskRecord]] = {}
    for task in tasks.values():
        children.setdefault(task.owner, []).append(task)

    def node(task: TaskRecord) -> TaskNode:
        below = tuple(node(child) for child in children.get(task.task_id, ()))
        return TaskNode(task, below, subtrees[task.task_id])

    return tuple(node(task) for task in tasks.values() if task.owner not in tasks)


def _todo_list(view: dict[str, Any]) -> TodoList:
    """A todo list from its view (`TodoList.view`: `blocks` and `blocked` are derived)."""
    fields = set(TodoItem.__struct_fields__)
    items = [
        msgspec.convert({k: v for k, v in item.items() if k in fields}, TodoItem)
        for item in view["items"]
    ]
    return TodoList.of(view["goal"], items, changed_seq=0, refs=())


def session_report(
    where: Path | str,
    session_id: str | None = None,
    prices: Mapping[str, Price] | None = None,
    *,
    last: int = 10,
    windows: Windows | None = None,
    warn: Callable[[str], None] = lambda _: None,
    workers: WorkersReader | None = None,
) -> SessionReport:
    """The report of session `session_id` under the sessions root `where` (or, without
    an id, of the session directory `where`), as `orchestrator sessions show` makes it:
    `prices` (model name to `orchestrator.Price`) cost its calls, `last` journal
    records are listed, `windows` gives a model's context window (by default: only a
    scripted model's, from its script). Raises `SessionNotFound` (a `SessionError`) for
    no such session. A session of an older format is migrated first (under its lock;
    `warn` is told); a running one is read as far as it is on disk. The records of its
    tasks on workers, if it has some, are read by `workers` (without: the report says
    they are not read)."""
    directory = Path(where) if session_id is None else session_dir(Path(where), session_id)
    data = read_report(directory, last, prices or {}, windows, warn, workers)
    return SessionReport.of(data, directory)
