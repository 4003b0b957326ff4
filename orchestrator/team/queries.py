"""Questions the team asks of the folded state (tasks and mailbox together): pure
functions of a `SessionState`, so every part of the team, and a runner, asks them alike.
"""

from __future__ import annotations

from orchestrator.errors import ToolFailed
from orchestrator.loop.assessment import REPEATS
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import MAIN as MAIN
from orchestrator.state.mailbox import Mail
from orchestrator.state.tasks import TaskRecord
from orchestrator.team.definitions import AgentDefinition, Definitions

PARKING = frozenset({"decision_required", "blocked"})  # kinds that park a task until answered


def task(state: SessionState, task_id: str) -> TaskRecord:
    """The task's record; a `ToolFailed` when there is none (naming no other task: an
    agent learns of tasks only from its own, see `own_task`)."""
    record = state.tasks.get(task_id)
    if record is None:
        raise ToolFailed(f"no task {task_id!r}")
    return record


def own_task(state: SessionState, agent: str, task_id: str) -> TaskRecord:
    """`agent`'s own task `task_id`. Another agent's task gets the same error as one that
    does not exist, listing only `agent`'s own: which tasks others run is not its to
    know."""
    record = state.tasks.get(task_id)
    if record is None or record.owner != agent:
        mine = ", ".join(t.task_id for t in state.tasks.tasks.values() if t.owner == agent)
        raise ToolFailed(f"no task {task_id!r} of yours; your tasks: {mine or 'none'}")
    return record


def mail_from_owner(state: SessionState, task_id: str) -> list[Mail]:
    """Undelivered messages from the task's owner."""
    owner = task(state, task_id).owner
    return [m for m in state.mailbox.undelivered(task_id) if m.sender == owner]


def has_work(state: SessionState, record: TaskRecord) -> bool:
    """Live, or completed while its owner wrote to it (it goes on to read that)."""
    if record.live:
        return True
    return record.state == "completed" and bool(mail_from_owner(state, record.task_id))


def live_children(state: SessionState, agent: str) -> list[TaskRecord]:
    """`agent`'s tasks that are live or about to be."""
    return [t for t in state.tasks.children(agent) if has_work(state, t)]


def waits_for(state: SessionState, agent: str, task_id: str) -> bool:
    """Whether the task is parked on a question or a block `agent` has not answered."""
    if task(state, task_id).state != "waiting_decision":
        return False
    return any(m.task_id == task_id and m.kind in PARKING for m in state.mailbox.unanswered(agent))


def repeating(state: SessionState, agent: str) -> bool:
    """The same call again and again: the turn ends, for the assessment to stop it."""
    return state.progress_of(agent).call_repeats >= REPEATS


def definition(state: SessionState, definitions: Definitions, agent: str) -> AgentDefinition | None:
    """The type of the task `agent` works (None for the main agent)."""
    record = state.tasks.get(agent)
    return None if record is None else definitions.get(record.agent_type)
