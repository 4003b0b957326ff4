"""The small state of a session: what its fold keeps beside the contexts' messages, and
how each record changes it (`SMALL_FOLDS`). `SessionState` (fold.py) adds the fold's
entry points, which compose these folds with the contexts' (`CONTEXT_FOLDS`), and the
snapshot; the folds here compose those of the concepts that own the records: the task
registry's in `tasks.py`, the mailbox's in `mailbox.py`, the plans' in `plans.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from orchestrator.loop.assessment import (
    AgentProgress,
    Assessed,
    BlockedReported,
    RefusedCall,
    Verified,
)
from orchestrator.loop.compaction import ContextCompacted
from orchestrator.loop.plan_run import todo_status
from orchestrator.loop.todos import TodoList, TodosChanged
from orchestrator.messages import Usage
from orchestrator.state.approvals import APPROVAL_FOLDS, Approvals, RemoteRefused
from orchestrator.state.checkpoints import CHECKPOINT_FOLDS, Checkpoints
from orchestrator.state.context import AgentContext, FoldError
from orchestrator.state.events import (
    AgentStarted,
    AssistantReplied,
    CallResult,
    PermissionGranted,
    SessionStatusChanged,
    TurnEnded,
    TurnStarted,
)
from orchestrator.state.fallbacks import FALLBACK_FOLDS, Fallbacks
from orchestrator.state.hooks import HOOK_FOLDS, Hooked
from orchestrator.state.mailbox import MAIN, USER, Mailbox, MessagePosted, MessagesDelivered
from orchestrator.state.manifest import SessionStatus
from orchestrator.state.mcp import MCP_FOLDS, McpElicited, McpSampled, McpState
from orchestrator.state.plans import PLAN_FOLDS, Plans
from orchestrator.state.settings import SessionSettings, SettingsChosen
from orchestrator.state.task_fold import TASK_FOLDS
from orchestrator.state.tasks import (
    SETTLED,
    Registry,
    TaskChanged,
    TaskCreated,
    TaskUsed,
)

SAID_KEPT = 50
"""How many of an owner's messages to an agent the state keeps, the newest."""
REFUSED_ARGUMENTS = 300
"""How much of a refused call's arguments the state keeps, for its summary line."""


class SmallState:
    """What the fold of a session's journal keeps beside the contexts' messages: statuses,
    counters, the task records, the mail, the todo lists, each agent's progress, the
    plans; and the contexts, whose counters records change too."""

    def __init__(self) -> None:
        self.seq = 0
        self.status: SessionStatus = "running"
        self.agents: dict[str, AgentContext] = {}
        self.grants: list[PermissionGranted] = []  # allowed by the person for the session
        self.tasks = Registry()
        self.mailbox = Mailbox()
        self.todos: dict[str, TodoList] = {}
        self.progress: dict[str, AgentProgress] = {}
        self.rounds = 0  # model calls of every agent
        self.usage_by_model: dict[str, Usage] = {}  # for cost: tokens per model
        self.settings: SessionSettings | None = None  # the last `settings` record's
        # Calls refused for want of approval (status `unapproved`) since the user last
        # wrote to the main agent: what a headless run's outcome and summary report.
        self.refused: list[RefusedCall] = []
        # Context windows learned from context-too-long errors, by model name (tokens).
        self.windows: dict[str, int] = {}
        # What each agent's owner (the person, for the main agent) wrote to it, verbatim,
        # the newest `SAID_KEPT`: what a compaction puts back word for word.
        self.said: dict[str, list[str]] = {}
        self.plans = Plans()  # every version of the plan and its decision
        self.approvals = Approvals()  # calls parked for a person's decision, and decisions
        self.fallbacks = Fallbacks()  # the model each fallback chain that moved is on
        self.hooks = Hooked()  # hooks' decisions not acted on yet (state/hooks.py)
        self.mcp = McpState()  # MCP tools' pinned definitions, and the tools agents loaded
        self.checkpoints = Checkpoints()  # workspace checkpoints, a restore, the fork link

    def todo_list(self, agent: str) -> TodoList:
        """The agent's todo list (empty when it has none yet)."""
        return self.todos.get(agent) or TodoList()

    def progress_of(self, agent: str) -> AgentProgress:
        progress = self.progress.get(agent)
        if progress is None:
            progress = self.progress[agent] = AgentProgress()
        return progress

    def agent(self, agent_id: str) -> AgentContext:
        try:
            return self.agents[agent_id]
        except KeyError:
            raise FoldError(f"no agent {agent_id!r} has started") from None


def _agent_started(state: SmallState, seq: int, record: AgentStarted) -> None:
    state.agents[record.agent] = AgentContext(id=record.agent, role=record.role, start=seq)


def _turn_started(state: SmallState, seq: int, record: TurnStarted) -> None:
    state.agent(record.agent).turn_open = True


def _replied(state: SmallState, seq: int, record: AssistantReplied) -> None:
    context = state.agent(record.agent)
    context.steps += 1
    state.rounds += 1
    usage = record.message.usage
    if usage is not None:
        _spent(state, context, record.model, usage)
    state.progress_of(record.agent).replied(seq, record.message)


def _turn_ended(state: SmallState, seq: int, record: TurnEnded) -> None:
    state.agent(record.agent).turn_open = False


def _status(state: SmallState, seq: int, record: SessionStatusChanged) -> None:
    state.status = record.status


def _granted(state: SmallState, seq: int, record: PermissionGranted) -> None:
    state.grants.append(record)


def _task_used(state: SmallState, seq: int, record: TaskUsed) -> None:
    """A task on a worker's model calls, counted as if its replies were journaled here."""
    TASK_FOLDS[TaskUsed](state.tasks, seq, record)
    context = state.agent(record.task)
    context.steps += record.calls
    state.rounds += record.calls
    _spent(state, context, record.model, record.usage)


def _spent(state: SmallState, context: AgentContext, model: str, usage: Usage) -> None:
    """`usage` of `model` counted to `context` and to the session's usage by model."""
    context.usage += usage
    by_model = state.usage_by_model
    before = by_model.get(model)
    by_model[model] = usage if before is None else before + usage


def _task(state: SmallState, seq: int, record: TaskCreated | TaskChanged) -> None:
    TASK_FOLDS[type(record)](state.tasks, seq, record)
    task = state.tasks.get(record.task)
    if task is not None and task.plan_ref:
        todos = state.todos.get(task.owner)
        if todos is not None:
            _follow_tasks(state, todos, (task.plan_ref,))
    if isinstance(record, TaskChanged) and record.state in SETTLED and task is not None:
        state.progress_of(task.owner).progressed()


def _follow_tasks(state: SmallState, todos: TodoList, plan_refs: Iterable[str]) -> None:
    """Each todo linked to a plan task takes its status from the task record of that plan
    task (not delegated yet: pending), by `TODO_STATUS`: the plan, the todo list and the
    task tree cannot disagree."""
    for plan_ref in plan_refs:
        item = todos.items.get(plan_ref)
        if item is None or item.plan_task != plan_ref:
            continue
        task = state.tasks.by_plan_ref(plan_ref)
        status = todo_status(task.state if task is not None else "")
        failure = task.reason if task is not None and status in ("failed", "cancelled") else ""
        done = task.completion if task is not None and status == "completed" else None
        result = done.summary if done is not None else ""
        if (item.status, item.failure, item.result) != (status, failure, result):
            todos.items[plan_ref] = msgspec.structs.replace(
                item,
                status=status,
                failure=failure,
                result=result,
                updated=task.updated if task is not None else item.updated,
            )


def _posted(state: SmallState, seq: int, record: MessagePosted) -> None:
    mail = state.mailbox.posted(seq, record)
    state.tasks.note_message(seq, mail)


def _delivered(state: SmallState, seq: int, record: MessagesDelivered) -> None:
    _heard(state, record.agent, record.ids)
    state.mailbox.delivered(seq, record.agent, record.ids)


def _heard(state: SmallState, agent: str, ids: tuple[str, ...]) -> None:
    task = state.tasks.get(agent)
    owner = task.owner if task is not None else USER
    messages = state.mailbox.messages
    said = [m.summary for i in ids if (m := messages.get(i)) is not None and m.sender == owner]
    from_owner = bool(said)
    if said:  # their words, kept whole for a compaction's anchors (docs/compaction.md)
        kept = state.said.setdefault(agent, [])
        kept.extend(said)
        del kept[:-SAID_KEPT]
    state.progress_of(agent).heard(from_owner=from_owner)
    if from_owner:
        state.hooks.spoke(agent)
    if from_owner and agent == MAIN:
        state.refused.clear()  # the person has spoken since: they were told of them


def _call_result(state: SmallState, seq: int, record: CallResult) -> None:
    if record.delivers:
        _heard(state, record.agent, record.delivers)
        state.mailbox.delivered(seq, record.agent, record.delivers)
    state.mailbox.call_done(record.agent, record.ref)
    state.approvals.call_done(record.agent, record.ref)
    state.hooks.call_done(record.agent, record.ref)
    if record.status == "ok":
        state.progress_of(record.agent).progressed()
    elif record.status == "unapproved":
        # Before the context's fold closes the call: its tool and arguments are there.
        call = state.agent(record.agent).open_calls.get(record.ref)
        state.refused.append(
            RefusedCall(
                agent=record.agent,
                tool=call.name if call is not None else "",
                arguments=call.arguments[:REFUSED_ARGUMENTS] if call is not None else "",
            )
        )


def _todos(state: SmallState, seq: int, record: TodosChanged) -> None:
    todos = state.todos.get(record.agent)
    if todos is None:
        todos = state.todos[record.agent] = TodoList()
    todos.apply(seq, record)
    _follow_tasks(state, todos, [i.plan_task for i in record.items if i.plan_task])
    if record.plan_version:
        state.plans.seeded = record.plan_version
    state.progress_of(record.agent).progressed()


def _assessed(state: SmallState, seq: int, record: Assessed) -> None:
    state.progress_of(record.agent).assessed(seq, record)


def _verified(state: SmallState, seq: int, record: Verified) -> None:
    state.progress_of(record.agent).verified(seq, record)


def _blocked(state: SmallState, seq: int, record: BlockedReported) -> None:
    state.progress_of(record.agent).reported_blocked(record)


def _compacted(state: SmallState, seq: int, record: ContextCompacted) -> None:
    context = state.agent(record.agent)
    context.compactions += 1
    state.hooks.compacted(record.agent)
    context.summary_calls += record.attempts
    after = None if record.method == "truncated" else record.after
    if record.reason != "by_hand":  # the breaker guards the automatic trigger only
        context.breaker = context.breaker.after(
            before=record.before, after=after, at_round=context.steps, min_freed=record.min_freed
        )
    if record.usage is not None:
        _spent(state, context, record.model, record.usage)
    if record.window:
        state.windows[record.window_model] = record.window


def _plan(fold: Callable[[Plans, int, Any], None]) -> Callable[[SmallState, int, Any], None]:
    def apply(state: SmallState, seq: int, record: Any) -> None:
        fold(state.plans, seq, record)

    return apply


def _approval(
    fold: Callable[[Approvals, int, Any], None],
) -> Callable[[SmallState, int, Any], None]:
    def apply(state: SmallState, seq: int, record: Any) -> None:
        fold(state.approvals, seq, record)

    return apply


def _remote_refused(state: SmallState, seq: int, record: RemoteRefused) -> None:
    arguments = record.arguments[:REFUSED_ARGUMENTS]
    state.refused.append(RefusedCall(agent=record.agent, tool=record.tool, arguments=arguments))


def _fallback(
    fold: Callable[[Fallbacks, int, Any], None],
) -> Callable[[SmallState, int, Any], None]:
    def apply(state: SmallState, seq: int, record: Any) -> None:
        fold(state.fallbacks, seq, record)

    return apply


def _hook(
    fold: Callable[[Hooked, int, Any], None],
) -> Callable[[SmallState, int, Any], None]:
    def apply(state: SmallState, seq: int, record: Any) -> None:
        fold(state.hooks, seq, record)

    return apply


def _mcp(fold: Callable[[McpState, int, Any], None]) -> Callable[[SmallState, int, Any], None]:
    def apply(state: SmallState, seq: int, record: Any) -> None:
        fold(state.mcp, seq, record)

    return apply


def _mcp_elicited(state: SmallState, seq: int, record: McpElicited) -> None:
    """A question nobody could answer blocks the session as a refused call does (until
    the person speaks)."""
    MCP_FOLDS[McpElicited](state.mcp, seq, record)
    if record.waiting:
        tool = f"{record.server}__{record.tool}"
        state.refused.append(RefusedCall(agent=record.agent, tool=tool, arguments=""))


def _mcp_sampled(state: SmallState, seq: int, record: McpSampled) -> None:
    """A server's completion counts to the calling agent's usage and the session's."""
    MCP_FOLDS[McpSampled](state.mcp, seq, record)
    _spent(state, state.agent(record.agent), record.model, record.usage)


def _checkpoint(
    fold: Callable[[Checkpoints, int, Any], None],
) -> Callable[[SmallState, int, Any], None]:
    def apply(state: SmallState, seq: int, record: Any) -> None:
        fold(state.checkpoints, seq, record)

    return apply


def _settings(state: SmallState, seq: int, record: SettingsChosen) -> None:
    state.settings = record.settings


SMALL_FOLDS: dict[type, Callable[[SmallState, int, Any], None]] = {
    AgentStarted: _agent_started,
    TurnStarted: _turn_started,
    AssistantReplied: _replied,
    TurnEnded: _turn_ended,
    SessionStatusChanged: _status,
    PermissionGranted: _granted,
    TaskCreated: _task,
    TaskChanged: _task,
    TaskUsed: _task_used,
    MessagePosted: _posted,
    MessagesDelivered: _delivered,
    CallResult: _call_result,
    TodosChanged: _todos,
    Assessed: _assessed,
    Verified: _verified,
    BlockedReported: _blocked,
    SettingsChosen: _settings,
    ContextCompacted: _compacted,
    **{kind: _plan(fold) for kind, fold in PLAN_FOLDS.items()},
    **{kind: _approval(fold) for kind, fold in APPROVAL_FOLDS.items()},
    RemoteRefused: _remote_refused,
    **{kind: _fallback(fold) for kind, fold in FALLBACK_FOLDS.items()},
    **{kind: _hook(fold) for kind, fold in HOOK_FOLDS.items()},
    **{kind: _mcp(fold) for kind, fold in MCP_FOLDS.items()},
    McpElicited: _mcp_elicited,
    McpSampled: _mcp_sampled,
    **{kind: _checkpoint(fold) for kind, fold in CHECKPOINT_FOLDS.items()},
}
"""How each record changes the small state, by record type. Records of the conversation
change contexts too (`CONTEXT_FOLDS`); every record kind is in one table or both."""
