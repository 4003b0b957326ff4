"""Questions the team asks of the folded state (tasks and mailbox together): pure
functions of a `SessionState`, so every part of the team, and a runner, asks them alike.
"""

from __future__ import annotations

from orchestrator.errors import ToolFailed
from orchestrator.loop.assessment import REPEATS, AgentProgress
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import MAIN as MAIN
from orchestrator.state.mailbox import Mail
from orchestrator.state.tasks import TaskRecord
from orchestrator.team.definitions import AgentDefinition, Definitions

PLANNER = "planner"
"""The planner's agent id and role (team/planning.py)."""


def is_planner(agent: str) -> bool:
    """The planner (`planner`) or a re-planner (`planner-2`, ...: a fresh context each)."""
    return agent == PLANNER or agent.startswith(PLANNER + "-")


BUILDER = "builder"
"""The main agent's role when it builds an approved plan."""

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


def orphans(state: SessionState) -> list[TaskRecord]:
    """Live tasks whose owner task has ended: nobody above them waits for them but the
    main agent, which answers for the session (it waits for them before it ends)."""
    found = []
    for record in state.tasks.live():
        owner = state.tasks.get(record.owner)
        if owner is not None and not has_work(state, owner):
            found.append(record)
    return found


def waits_for(state: SessionState, agent: str, task_id: str) -> bool:
    """Whether the task is parked on a question or a block `agent` has not answered."""
    if task(state, task_id).state != "waiting_decision":
        return False
    return any(m.task_id == task_id and m.kind in PARKING for m in state.mailbox.unanswered(agent))


def progress(state: SessionState, agent: str) -> AgentProgress:
    """The agent's progress as the fold has it, read without adding an entry for an
    agent the fold has none for (a read must not make the live state differ from the
    same records folded again on resume)."""
    return state.progress.get(agent) or AgentProgress()


def repeating(state: SessionState, agent: str) -> bool:
    """The same call again and again: the turn ends, for the assessment to stop it."""
    return progress(state, agent).call_repeats >= REPEATS


def definition(state: SessionState, definitions: Definitions, agent: str) -> AgentDefinition | None:
    """The type of the task `agent` works (None for the main agent)."""
    record = state.tasks.get(agent)
    return None if record is None else definitions.get(record.agent_type)


def unanswerable(state: SessionState, *, main_idle: bool) -> list[Mail]:
    """The open questions (and reports of being blocked) that park their task and that
    no agent is there to answer: asked of a task that is not running (it ended, or it
    sleeps waiting itself), or of the main agent when its turn is over (`main_idle`).
    Oldest first. The person answers them (`resume --message`), or nobody does."""
    found = []
    for parked in state.tasks.live():
        if parked.state != "waiting_decision":
            continue
        owner = state.tasks.get(parked.owner)
        if owner is None and not (parked.owner == MAIN and main_idle):
            continue
        if owner is not None and owner.state == "running":
            continue
        found += [
            m
            for m in state.mailbox.unanswered(parked.owner)
            if m.sender == parked.task_id and m.kind in PARKING
        ]
    found.sort(key=lambda m: m.posted_seq)
    return found


def describe_question(state: SessionState, mail: Mail) -> str:
    """One line for a person: which task asks what, of whom."""
    owner = state.tasks.get(mail.recipient)
    how = {
        "waiting_children": "waits for its own tasks",
        "waiting_decision": "waits for an answer itself",
    }
    whom = (
        "the main agent"
        if owner is None
        else f"task {owner.task_id}, which {how.get(owner.state, 'has ' + owner.state)}"
    )
    return f"task {mail.sender} asks ({mail.message_id}, of {whom}): {mail.summary}"
