"""Typed events: what agents do, as one discriminated union; and the records the
journal keeps of them.

The CLI renders events, `--json` prints them as JSON lines, and the session journals each
event's `record()`: most persistent events are their own record, a tool call's start and
result are journaled in a compact form that names the call by its ref, and the rest (like
streamed text) are only for people watching. Later subsystems (mailbox, tasks, todos) add
their own events and records to these unions.
"""

import functools
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, Protocol

import msgspec
import orjson

from orchestrator.eventbase import EventBase
from orchestrator.loop.assessment import AssessmentRecords
from orchestrator.loop.compaction import CompactionRecords, CompactionStarted
from orchestrator.loop.todos import TodoRecords
from orchestrator.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResult,
    ToolStatus,
    Usage,
    plain,
)
from orchestrator.state.approvals import ApprovalRecords
from orchestrator.state.checkpoints import CheckpointRecords
from orchestrator.state.fallbacks import FallbackRecords
from orchestrator.state.hooks import HookRecords
from orchestrator.state.mailbox import MailRecords
from orchestrator.state.manifest import SessionStatus
from orchestrator.state.mcp import McpRecords
from orchestrator.state.plans import PlanRecords
from orchestrator.state.settings import SettingsRecords
from orchestrator.state.tasks import TaskRecords

_Event = EventBase


class AgentStarted(_Event, frozen=True, tag="agent_started"):
    """A new agent context: its role and the messages it starts from (system, goal)."""

    role: str
    messages: tuple[Message, ...]


class MessageAdded(_Event, frozen=True, tag="message_added"):
    """A user or system message appended to an agent's context outside a model reply."""

    message: Message


class TurnStarted(_Event, frozen=True, tag="turn_started"):
    """A turn of the agent began (its user message, if any, is already in the context)."""


class TextStreamed(_Event, frozen=True, tag="text"):
    """A piece of assistant text as it arrives (not journaled: the reply is)."""

    persist: ClassVar[bool] = False
    text: str


class AssistantReplied(_Event, frozen=True, tag="assistant_replied"):
    message: AssistantMessage
    model: str = ""  # the model that replied, for usage and cost accounting

    def journal_body(self) -> dict[str, Any]:
        body = super().journal_body()
        del body["message"]["role"]  # a reply is always the assistant's
        return body


class ToolCallStarted(_Event, frozen=True, tag="tool_call_started"):
    """A call is about to run (or to be answered with an error, if it will not run).
    `ref` names it uniquely in the session (see context.py)."""

    persist: ClassVar[bool] = False
    ref: str
    call: ToolCall
    read_only: bool
    idempotent: bool

    def record(self) -> "Record | None":
        # Only a side effect that must not be repeated needs its start on disk: every
        # other call is simply run again after a crash.
        return None if self.idempotent else EffectStarted(agent=self.agent, ref=self.ref)


class ToolCallFinished(_Event, frozen=True, tag="tool_call_finished"):
    persist: ClassVar[bool] = False
    ref: str
    result: ToolResult
    delivers: tuple[str, ...] = ()  # mailbox messages this result hands over (wait_tasks)

    def record(self) -> "Record | None":
        return CallResult(
            agent=self.agent,
            ref=self.ref,
            status=self.result.status,
            content=self.result.content,
            delivers=self.delivers,
            changed=self.result.changed,
        )


class EffectStarted(_Event, frozen=True, tag="call_started"):
    """Record: the call `ref`, whose tool is not idempotent, started running."""

    ref: str


class CallResult(_Event, frozen=True, tag="call_result"):
    """Record: the result of the call `ref` (its id and tool name are in the reply)."""

    ref: str
    status: ToolStatus = "ok"
    content: str = ""
    # Mailbox messages whose delivery this result is (their text is in `content`).
    delivers: tuple[str, ...] = ()
    # The workspace paths the call changed (`ToolResult.changed`).
    changed: tuple[str, ...] = ()


class PermissionGranted(_Event, frozen=True, tag="permission_granted"):
    """Record: the person allowed `tool` (for the shell, commands matching `pattern`)
    for the rest of the session; a resume keeps it."""

    tool: str
    pattern: str = ""


class UsageUpdated(_Event, frozen=True, tag="usage"):
    """Tokens of the last model call and the agent's running total; its context's size
    now, in tokens, and the usable input of its model's window (0: not known)."""

    persist: ClassVar[bool] = False
    usage: Usage
    total: Usage
    context: int = 0
    usable: int = 0


TurnEndReason = Literal["completed", "yielded", "max_rounds", "cancelled", "failed"]
"""`completed`: the model answered without calling a tool; `yielded`: a tool ended the
turn (a subagent's `complete` or `ask_decision`, say); the rest say why it was cut."""


class TurnEnded(_Event, frozen=True, tag="turn_ended"):
    reason: TurnEndReason
    rounds: int
    detail: str = ""


class SessionStatusChanged(_Event, frozen=True, tag="session_status"):
    """The session as a whole started, finished, failed or was stopped by the user."""

    status: SessionStatus
    detail: str = ""


class ToolProgress(_Event, frozen=True, tag="tool_progress"):
    """How far a running call has got, as its tool said (`ToolContext.report_progress`):
    for whoever watches, not journaled."""

    persist: ClassVar[bool] = False
    ref: str  # the call's ref in the session (see context.py)
    tool: str
    message: str
    percent: float | None = None


class Notice(_Event, frozen=True, tag="notice"):
    """Something a person should know that did not stop the work (e.g. a cut torn tail)."""

    persist: ClassVar[bool] = False
    message: str


class EngineWaiting(Notice, frozen=True, tag="engine_waiting"):
    """The engine's database cannot be reached: the engine waits and tries again, until
    its patience runs out (docs/engine.md). Said once an outage, not journaled."""

    error: str  # the error's first line
    attempt: int  # the attempts that failed so far
    wait: float  # seconds until the next


class ModelWaiting(Notice, frozen=True, tag="model_waiting"):
    """An agent's model call waits before it is sent: a rate limit's hold, a retry's
    backoff, or a place among the calls its endpoint takes at once (models/retrying.py).
    Said when the wait begins (if it is a second or more, or has no end known), not
    journaled."""

    seconds: float | None  # how long (None: until a place frees)
    why: str  # what it waits for ("openai is rate-limited: trying again")


class ReplyCut(Notice, frozen=True, tag="reply_cut"):
    """An agent's reply was cut after part of it arrived (a dropped connection, a stream
    that ended early): it is asked for again from its start, and what arrived of it is
    dropped (the whole reply is what is journaled). Not journaled."""

    error: str  # why it was cut, as the provider's error says


LimitRecovery = Literal["continue", "larger", "too_long"]
"""What becomes of a reply cut at its output limit (agent/recovery.py)."""


class ReplyAtLimit(Notice, frozen=True, tag="reply_at_limit"):
    """An agent's reply was cut at its output limit: its text is continued (`continue`:
    the model is asked to go on where it stopped), it is asked for again with a larger
    limit (`larger`, with `max_tokens`: a call of it was cut), or a call of it, cut
    again, is answered as too long to emit and never runs (`too_long`). Not journaled:
    the reply journaled is the whole one, its usage that of every attempt."""

    how: LimitRecovery
    recovery: int  # which ask this is of the reply's (at most 2); 0 for `too_long`
    max_tokens: int | None = None  # the larger limit asked for (`larger`)


class EngineBack(Notice, frozen=True, tag="engine_back"):
    """The engine's database answers again after an outage (`EngineWaiting`)."""

    waited: float  # seconds the outage lasted, as far as the engine saw it


Conversation = (
    AgentStarted
    | MessageAdded
    | TurnStarted
    | AssistantReplied
    | PermissionGranted
    | TurnEnded
    | SessionStatusChanged
)
"""The conversation's events that are their own records."""

Concepts = (
    TaskRecords
    | MailRecords
    | TodoRecords
    | AssessmentRecords
    | SettingsRecords
    | CompactionRecords
    | PlanRecords
    | ApprovalRecords
    | FallbackRecords
    | HookRecords
    | McpRecords
    | CheckpointRecords
)
"""Each concept's records, declared in its own module beside their fold: a new record kind
joins its concept's union there, and so the unions below."""

Event = (
    Conversation
    | TextStreamed
    | ToolCallStarted
    | ToolCallFinished
    | ToolProgress
    | UsageUpdated
    | Notice
    | EngineWaiting
    | ModelWaiting
    | ReplyCut
    | ReplyAtLimit
    | EngineBack
    | CompactionStarted
    | Concepts
)
"""Every event an agent emits: what the session journals (or not) and the screen shows."""

Record = Conversation | EffectStarted | CallResult | Concepts
"""What the journal holds: one record per line, decoded and validated straight from the
line's bytes by `decode_record` (the frame's `seq`, `t`, `more` and `crc` are ignored)."""


@functools.cache
def record_decoder() -> msgspec.json.Decoder[Record]:
    """The decoder of journal lines, built on first use: building it resolves the types of
    every record (some 15 ms), which `sessions show` from a snapshot does without."""
    return msgspec.json.Decoder(Record)


def decode_record(line: bytes) -> Record:
    """A journal line (or any JSON of a record with its `k` and `a`) as its typed record;
    raises `msgspec.DecodeError` (a `ValueError`; `ValidationError` when a field does not
    fit, naming it)."""
    return record_decoder().decode(line)


def event_json(event: Event) -> dict[str, Any]:
    """An event as people and programs read it (`--json`): `kind`, `agent` and every
    field, defaults included."""
    fields: dict[str, Any] = plain(event)
    return {"kind": fields.pop("k"), **fields}  # the journal's `k` is the event's `kind`


def event_from_json(data: bytes) -> Event:
    """The event `event_json` wrote (as a JSON line); raises `ValueError` if it is not one."""
    fields = orjson.loads(data)
    if not isinstance(fields, dict):
        raise ValueError("an event must be a JSON object")
    frame = {"k": fields.pop("kind", None), "a": fields.pop("agent", None)}
    event: Event = msgspec.convert({**frame, **fields}, Event)
    return event


class EventSink(Protocol):
    """Where events go. `durable=True` asks the sink not to return before the event is
    on disk (the write-ahead rule for side-effecting tool calls)."""

    async def emit(self, event: Event, *, durable: bool = False) -> None: ...


class NullSink:
    async def emit(self, event: Event, *, durable: bool = False) -> None:
        return None


class ListSink:
    """Keeps every event; for tests and for building transcripts."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        self.events.append(event)


class FanOut:
    """Sends each event to several sinks in order (e.g. the journal, then the screen)."""

    def __init__(self, sinks: Sequence[EventSink]) -> None:
        self.sinks = tuple(sinks)

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        for sink in self.sinks:
            await sink.emit(event, durable=durable)
