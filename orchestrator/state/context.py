"""One agent's context: its messages and the calls of its last reply, folded from records.

There is one context per agent. The turn loop reads it and never writes it: every change
is an event that the session journals and then folds here (`CONTEXT_FOLDS`), live and on
resume alike, so the two cannot disagree.

A tool call is keyed by its **ref**, `"<seq>.<index>"`: the journal seq of the reply that
made it and its place in that reply. Refs are unique in a session whatever ids a provider
gives its calls (local servers reuse them), so call starts and results name their call by
ref instead of repeating it.

Per-round costs do not grow with the conversation: `view()` is a constant-time read-only
window on the messages, and `chars` keeps a running size for token estimates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrator.eventbase import FoldError as FoldError
from orchestrator.loop.assessment import Assessed, Verified
from orchestrator.loop.compaction import Breaker, ContextCompacted, Count
from orchestrator.messages import (
    Message,
    MessageView,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from orchestrator.state.events import (
    AgentStarted,
    AssistantReplied,
    CallResult,
    EffectStarted,
    MessageAdded,
)
from orchestrator.state.hooks import HookDecided
from orchestrator.state.mailbox import MessagesDelivered
from orchestrator.store.scan import JournalMark


def call_ref(seq: int, index: int) -> str:
    """The ref of the `index`th call of the reply journaled at `seq`."""
    return f"{seq}.{index}"


@dataclass
class AgentContext:
    """One agent: who it is, its counters, and its live context.

    The first group of fields is small state (snapshotted); the second is the context,
    rebuilt on resume from the journal records at and after `start`."""

    id: str
    role: str
    start: int = 0  # the seq where the live context starts (its agent_started record)
    steps: int = 0  # model calls so far
    usage: Usage = field(default_factory=Usage)  # tokens spent by its model calls so far
    turn_open: bool = False
    breaker: Breaker = field(default_factory=Breaker)  # compactions that freed too little
    compactions: int = 0
    summary_calls: int = 0  # model calls made for its summaries (the compactor's steps)
    # Files its tools changed before its newest checkpoint (their results are gone from
    # `messages`; team/writes.py adds those still there).
    files: tuple[str, ...] = ()
    # What it was started to do: its first user message (the goal, or a task's brief),
    # carried from checkpoint to checkpoint for the anchors.
    goal: str = ""
    # The files it read before its newest checkpoint, with the ref of the newest read.
    read: tuple[tuple[str, str], ...] = ()
    # The journal just before the record at `start` (its seq is `start - 1`), as the
    # writer had it: a resume reads the file from there (set by the live session).
    start_mark: JournalMark | None = None

    messages: list[Message] = field(default_factory=list)
    open_calls: dict[str, ToolCall] = field(default_factory=dict)  # ref -> call, no result yet
    effects: set[str] = field(default_factory=set)  # refs whose side effect started
    # The input tokens the provider reported for the request made of the first
    # `reported_at` messages (after a compaction: the estimate of the checkpoint).
    reported: int = 0
    reported_at: int = 0
    # The running size of the messages: a cache, extended when `chars` or `view` is
    # asked, so a resume folding 100,000 records does not size each message it reads.
    _marks: list[int] = field(default_factory=list)

    @property
    def chars(self) -> int:
        """The size of the whole context in characters; constant time per message added
        since the last ask."""
        marks = self._sized()
        return marks[-1] if marks else 0

    def count(self) -> Count:
        """The context's size in tokens: the provider's last count, and an estimate of
        what was added since, at the provider's own ratio of characters to tokens."""
        marks = self._sized()
        at = min(self.reported_at, len(marks))
        chars_then = marks[at - 1] if at else 0
        return Count(self.reported, chars_then, (marks[-1] if marks else 0) - chars_then)

    def view(self) -> MessageView:
        """The messages as they stand now, for a model request: constant time per message
        added since the last view, and later appends do not show through it."""
        return MessageView(self.messages, len(self.messages), self._sized())

    def _sized(self) -> list[int]:
        marks, messages = self._marks, self.messages
        if len(marks) < len(messages):
            total = marks[-1] if marks else 0
            for message in messages[len(marks) :]:
                total += message.chars()
                marks.append(total)
        return marks

    def pending_calls(self) -> list[tuple[str, ToolCall]]:
        """(ref, call) of the last reply's calls that have no result yet, in order."""
        return list(self.open_calls.items())

    # --- the fold of the conversation records (see state.py for the dispatch) ---------

    def reset(self, messages: Sequence[Message]) -> None:
        self.messages = []
        self._marks = []
        self.open_calls = {}
        self.effects = set()
        self.reported = self.reported_at = 0
        self.messages.extend(messages)

    def append(self, message: Message) -> None:
        self.messages.append(message)


def _started(context: AgentContext, seq: int, record: AgentStarted) -> None:
    context.reset(record.messages)
    first = next((m for m in record.messages if isinstance(m, UserMessage)), None)
    context.goal = first.content if first is not None else ""


def _added(context: AgentContext, seq: int, record: MessageAdded) -> None:
    context.append(record.message)


# The two below run for nearly every record of a long session, at resume too: written
# out rather than through helper calls, which cost more than the work itself here.


def _replied(context: AgentContext, seq: int, record: AssistantReplied) -> None:
    message = record.message
    calls = message.tool_calls
    if message.usage is not None:  # the request was the context before this reply
        usage = message.usage
        context.reported = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        context.reported_at = len(context.messages)
    context.messages.append(message)
    if len(calls) == 1:
        context.open_calls = {f"{seq}.0": calls[0]}
    else:
        context.open_calls = {call_ref(seq, i): call for i, call in enumerate(calls)}
    if context.effects:
        context.effects = set()


def _result(context: AgentContext, seq: int, record: CallResult) -> None:
    ref = record.ref
    call = context.open_calls.pop(ref, None)
    if call is None:
        raise FoldError(f"call {ref} of agent {context.id!r} is not an open call")
    if context.effects:
        context.effects.discard(ref)
    context.messages.append(
        ToolResult(
            call_id=call.id,
            name=call.name,
            status=record.status,
            content=record.content,
            changed=record.changed,
            ref=ref,
        )
    )


def _delivered(context: AgentContext, seq: int, record: MessagesDelivered) -> None:
    if context.open_calls:
        raise FoldError(f"mail delivered to {context.id!r} between a reply and its results")
    context.append(UserMessage(content=record.content))


def _noted(context: AgentContext, seq: int, record: Assessed | Verified) -> None:
    """A continuation note (an assessment's, or a failed verification's) is a user
    message in the agent's context."""
    if record.note:
        if context.open_calls:
            raise FoldError(f"a note for {context.id!r} between a reply and its results")
        context.append(UserMessage(content=record.note))


def _sent_back(context: AgentContext, seq: int, record: HookDecided) -> None:
    """A `stop` hook's continuation is a user message in the agent's context."""
    if record.action == "continue":
        if context.open_calls:
            raise FoldError(f"a hook's note for {context.id!r} between a reply and its results")
        context.append(UserMessage(content=record.text))


def _compacted(context: AgentContext, seq: int, record: ContextCompacted) -> None:
    """A checkpoint: the live context starts again here (a resume reads from it on)."""
    if context.open_calls:
        raise FoldError(f"a compaction of {context.id!r} between a reply and its results")
    context.reset(record.messages)
    context.start = seq
    context.files = record.files
    context.goal = record.goal
    context.read = record.read
    context.reported = record.after
    context.reported_at = len(record.messages)


def _effect(context: AgentContext, seq: int, record: EffectStarted) -> None:
    if record.ref not in context.open_calls:
        raise FoldError(f"call {record.ref} of agent {context.id!r} is not an open call")
    context.effects.add(record.ref)


CONTEXT_FOLDS: dict[type, Callable[[AgentContext, int, Any], None]] = {
    AgentStarted: _started,
    MessageAdded: _added,
    AssistantReplied: _replied,
    EffectStarted: _effect,
    CallResult: _result,
    MessagesDelivered: _delivered,
    Assessed: _noted,
    Verified: _noted,
    ContextCompacted: _compacted,
    HookDecided: _sent_back,
}
"""How each conversation record changes its agent's context, by record type (a lookup,
not a chain of type tests: resume runs it once per record)."""
