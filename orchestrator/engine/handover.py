"""What passes between a session and the journal of its task on a worker, as records
(engine/remote.py follows it): the records a run begins with, the task's state and its
model calls (its children's among them) as this session takes them, the mail it passes
into the task, and what the session shows of the task's work and of its children
(`TaskEvents`).

The session following a task is the task's owner: the session itself, or, for a child
of a task on a worker (engine/children.py), the team of that task on its worker."""

from __future__ import annotations

from orchestrator.loop.compaction import ContextCompacted
from orchestrator.messages import Usage
from orchestrator.state.events import (
    AgentStarted,
    AssistantReplied,
    Event,
    Record,
    TextStreamed,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import Mail, MessagePosted
from orchestrator.state.retell import RecordEvents
from orchestrator.state.settings import SessionSettings, SettingsChosen
from orchestrator.state.tasks import (
    SETTLED,
    TaskChanged,
    TaskCreated,
    TaskRecord,
    TaskUsed,
    now_ms,
)
from orchestrator.team.port import TaskPort


def spent(record: Record) -> tuple[str, Usage, int] | None:
    """The model, tokens and model calls a record of a task's journal says were spent."""
    if isinstance(record, AssistantReplied):
        usage = record.message.usage
        return (record.model, usage or Usage(), 1)
    if isinstance(record, ContextCompacted) and record.usage is not None:
        return (record.model, record.usage, 0)
    if isinstance(record, TaskUsed):  # its children's, counted in its journal by its worker
        return (record.model, record.usage, record.calls)
    return None


def start_records(state: SessionState, mirror: SessionState, task_id: str) -> list[Record]:
    """What the task's journal in the database needs before a run: the task itself, from
    this session (its first run), or its revival (a run after it had settled)."""
    task = state.tasks.tasks[task_id]
    if task_id not in mirror.tasks.tasks:
        context = state.agents[task_id]
        settings = state.settings or SessionSettings()
        return [
            # (Its own limits are the session's: it delegates as a local task does.)
            SettingsChosen(agent=task.owner, settings=settings, source="start"),
            AgentStarted(agent=task_id, role=context.role, messages=tuple(context.messages)),
            created(task),
        ]
    there = mirror.tasks.tasks[task_id]
    # Pending here and settled there: revived here, once this session had caught up with
    # its runs (else it is only behind: killed before it heard the task run and end).
    caught_up = len(task.instances) >= len(there.instances)
    if there.state in SETTLED and task.state == "pending" and caught_up:
        return [
            TaskChanged(
                agent=task.owner, task=task_id, state="pending", reason="revived", at=now_ms()
            )
        ]
    return []


def created(task: TaskRecord) -> TaskCreated:
    return TaskCreated(
        agent=task.owner,
        task=task.task_id,
        agent_type=task.agent_type,
        description=task.description,
        owner_task=task.owner_task,
        depth=task.depth,
        plan_ref=task.plan_ref,
        write_scope=None if task.write_scope is None else tuple(task.write_scope),
        resume=task.resume,
        deadline=task.deadline,
        round_budget=task.round_budget,
        token_budget=task.token_budget,
        at=task.created,
    )


async def mirror_state(port: TaskPort, mirror: SessionState, task_id: str) -> None:
    """The task's state here as the worker's records have it (a cancellation here stays)."""
    there = mirror.tasks.tasks.get(task_id)
    here = port.state.tasks.get(task_id)
    if there is None or here is None or here.state == there.state or here.state == "cancelled":
        return
    if there.state == "pending" and here.state in SETTLED:
        return  # its revival written for this run: this session has it already
    new = len(there.instances) > len(here.instances)  # a run began there: where, too
    await port.tasks.set_state(
        task_id,
        there.state,
        by=task_id,
        reason=there.reason,
        instance=there.instances[-1] if new else "",
        ran_on=there.ran_on if new else None,
    )


def posted(mail: Mail) -> MessagePosted:
    return MessagePosted(
        agent=mail.sender,
        id=mail.message_id,
        to=mail.recipient,
        task=mail.task_id,
        mail=mail.kind,
        priority=mail.priority,
        summary=mail.summary,
        data=mail.data,
        requires_ack=mail.requires_ack,
        in_reply_to=mail.in_reply_to,
        at=mail.at,
    )


SHOWN = (TurnStarted, TextStreamed, AssistantReplied, ToolCallStarted, ToolCallFinished, TurnEnded)
"""What a session shows of its task on a worker as it shows a local task's: its turns, its
replies (their text, their tokens in the live view) and its calls. Not the task's copies
of messages or its state changes, nor its usage: the session journals those itself (the
messages passed on, the state mirrored, the calls counted by `task_usage`)."""


class TaskEvents:
    """A task on a worker's records, as the session following it reads them, told again
    as the events a local task emits (`SHOWN`, by `RecordEvents`), to be shown, never
    journaled: they are the task's records. The first rows given are what the task's
    journal held when the session took it up (none for a new task; a resumed session's
    catch-up): they are read, for the calls their replies make, and not told, since they
    were shown before the session stopped, or done while nobody watched. So a resumed
    session's view is not flooded with its tasks' past; it shows what they do from then on.

    The task's children (delegated on its worker: their records and the mail between
    them and the task are the task's journal's, not the session's) are told too, the
    catch-up's included, so that the tree under the task is whole: each one's creation
    and changes of state, and that mail."""

    def __init__(self, task_id: str = "") -> None:
        self._task_id = task_id
        self._told: RecordEvents | None = None
        self._children: set[str] = set()

    def of(self, records: list[tuple[int, Record]]) -> list[Event]:
        """The events of `records` (seq, record), the task's next records in order."""
        catching_up = self._told is None
        if self._told is None:
            self._told = RecordEvents()
        told = self._told
        events: list[Event] = []
        for seq, record in records:
            if (child := self._of_children(record)) is not None:
                events.append(child)
                continue
            for _, event in told.of(seq, record):
                if isinstance(event, SHOWN) and not catching_up:
                    events.append(event)
        return events

    def _of_children(self, record: Record) -> TaskCreated | TaskChanged | MessagePosted | None:
        """`record` when it is one of the task's children's (not the task's own)."""
        match record:
            case TaskCreated(task=task) if task != self._task_id:
                self._children.add(task)
                return record
            case TaskChanged(task=task) if task in self._children:
                return record
            case MessagePosted(agent=sender, to=to) if {sender, to} & self._children:
                return record
            case _:
                return None
