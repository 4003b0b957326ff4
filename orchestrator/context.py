"""One agent's context: its messages and the calls of its last reply, folded from records.

There is one context per agent. The turn loop reads it and never writes it: every change
is an event that the session journals and then folds here (`fold_context`), live and on
resume alike, so the two cannot disagree.

A tool call is keyed by its **ref**, `"<seq>.<index>"`: the journal seq of the reply that
made it and its place in that reply. Refs are unique in a session whatever ids a provider
gives its calls (local servers reuse them), so call starts and results name their call by
ref instead of repeating it.

Per-round costs do not grow with the conversation: `view()` is a constant-time read-only
window on the messages, and `chars` keeps a running size for token estimates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from orchestrator.messages import (
    AssistantMessage,
    Message,
    MessageView,
    ToolCall,
    ToolResult,
    ToolStatus,
    Usage,
    message_chars,
)


def call_ref(seq: int, index: int) -> str:
    """The ref of the `index`th call of the reply journaled at `seq`."""
    return f"{seq}.{index}"


class FoldError(ValueError):
    """A record that does not fit the state it is folded into (names an unknown call or
    agent). The session layer reports it as corruption at the record's seq."""


@dataclass
class AgentContext:
    """One agent: who it is, its counters, and its live context.

    The first group of fields is small state (snapshotted); the second is the context,
    rebuilt on resume from the journal records at and after `start`."""

    id: str
    role: str
    start: int = 0  # the seq where the live context starts (its agent_started record)
    steps: int = 0  # model calls so far
    usage: Usage = field(default_factory=Usage)
    turn_open: bool = False

    messages: list[Message] = field(default_factory=list)
    open_calls: dict[str, ToolCall] = field(default_factory=dict)  # ref -> call, no result yet
    effects: set[str] = field(default_factory=set)  # refs whose side effect started
    _marks: list[int] = field(default_factory=list)  # running sum of message sizes

    @property
    def chars(self) -> int:
        """The size of the whole context in characters; constant time."""
        return self._marks[-1] if self._marks else 0

    def view(self) -> MessageView:
        """The messages as they stand now, for a model request: constant time, and later
        appends do not show through it."""
        return MessageView(self.messages, len(self.messages), self._marks)

    def pending_calls(self) -> list[tuple[str, ToolCall]]:
        """(ref, call) of the last reply's calls that have no result yet, in order."""
        return list(self.open_calls.items())

    # --- the fold of the conversation records (see state.py for the dispatch) ---------

    def reset(self, messages: Sequence[Message]) -> None:
        self.messages = []
        self._marks = []
        self.open_calls = {}
        self.effects = set()
        for message in messages:
            self.append(message)

    def append(self, message: Message) -> None:
        self.messages.append(message)
        self._marks.append(self.chars + message_chars(message))

    def replied(self, seq: int, message: AssistantMessage) -> None:
        self.append(message)
        self.open_calls = {call_ref(seq, i): call for i, call in enumerate(message.tool_calls)}
        self.effects = set()

    def effect_started(self, ref: str) -> None:
        if ref not in self.open_calls:
            raise FoldError(f"call {ref} of agent {self.id!r} is not an open call")
        self.effects.add(ref)

    def result(self, ref: str, status: ToolStatus, content: str) -> ToolResult:
        call = self.open_calls.pop(ref, None)
        if call is None:
            raise FoldError(f"call {ref} of agent {self.id!r} is not an open call")
        self.effects.discard(ref)
        result = ToolResult(call_id=call.id, name=call.name, status=status, content=content)
        self.append(result)
        return result
