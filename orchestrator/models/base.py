"""The one model protocol every adapter implements, and the events a stream yields."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from itertools import islice
from typing import Any, Generic, Literal, Protocol, TypeVar

import msgspec
from pydantic import BaseModel

from orchestrator.messages import (
    AssistantMessage,
    Message,
    MessageView,
    Thinking,
    ToolCall,
    Usage,
    Value,
)


class ToolSpec(BaseModel, frozen=True):
    """What the model sees of a tool: its name, description and JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


COMPACTOR = "compactor"
"""The role of a compaction's summary requests (team/compactor.py): its model writes the
summaries (`[agents.compactor]`), and the scripted model answers it apart."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call to a model.

    `messages` are already validated, so a request is a plain value, built in constant
    time: the turn loop passes a `MessageView` of the agent's context (adapters keep
    the wire form of what they translated before), and any sequence of messages works.
    `agent` and `role` name who is asking (the scripted model picks its replies by
    them); `step` counts this agent's earlier model calls, so a scripted model knows its
    place even after a resume or a compaction. `note` is a user message sent after them
    for this request only.
    """

    messages: Sequence[Message]
    tools: tuple[ToolSpec, ...] = ()
    agent: str = "main"
    role: str = "main"
    step: int = 0
    tool_choice: Literal["auto", "none", "required"] | str = "auto"
    max_tokens: int | None = None
    temperature: float | None = None
    stop: tuple[str, ...] = ()
    cache_key: str = ""  # the same for every request sharing a prefix (session and role)
    # Said to the model after `messages`, for this request only (never part of the
    # context, so the prefix the provider caches stays as it was): the agent's calls
    # running in the background, as they stand now.
    note: str = ""
    # How many times the turn loop asked again for this reply because it was cut at its
    # output limit (agent/recovery.py): 0 for a first request. The scripted model answers
    # recovery N of a step from its reply's `then`.
    recovery: int = 0


class TextDelta(Value, frozen=True, kw_only=True):
    kind: Literal["text"] = "text"
    text: str


class ThinkingDelta(Value, frozen=True, kw_only=True):
    """Reasoning text as it streams (shown to people, not sent back by itself)."""

    kind: Literal["thinking"] = "thinking"
    text: str


class ThinkingDone(Value, frozen=True, kw_only=True):
    """A whole reasoning block, kept so it can be replayed to providers that need it."""

    kind: Literal["thinking_done"] = "thinking_done"
    block: Thinking


class ToolCallReady(Value, frozen=True, kw_only=True):
    """A tool call whose arguments have fully arrived (possibly malformed JSON)."""

    kind: Literal["tool_call"] = "tool_call"
    call: ToolCall


class UsageReported(Value, frozen=True, kw_only=True):
    kind: Literal["usage"] = "usage"
    usage: Usage


class StreamEnded(Value, frozen=True, kw_only=True):
    kind: Literal["end"] = "end"
    stop_reason: str | None = None


MAX_TOKENS = "max_tokens"
"""The stop reason of a reply cut at its output limit, as every adapter says it:
Anthropic's own word, chat completions' `length` and the Responses API's `incomplete`
for `max_output_tokens`, translated."""

_AT_OUTPUT_LIMIT = frozenset({MAX_TOKENS, "length", "max_output_tokens"})


def at_output_limit(stop_reason: str | None) -> bool:
    """Whether a reply that stopped for `stop_reason` was cut at its output limit: the one
    place that decides it (the providers' own words are taken too, should an adapter pass
    one through untranslated)."""
    return stop_reason in _AT_OUTPUT_LIMIT


class Waiting(Value, frozen=True, kw_only=True):
    """The call waits before it is sent (or sent again): a rate limit's hold, a retry's
    backoff, or a place among the calls its endpoint takes at once. `seconds`: how long
    (None: until a place frees); `why`: for a person."""

    kind: Literal["waiting"] = "waiting"
    seconds: float | None
    why: str


class ModelChosen(Value, frozen=True, kw_only=True):
    """Which model of a fallback chain (models/fallback.py) answers this call, said before
    its reply. `instead_of` names the one it replaces and `why` says why (its error, or
    that the cool-down is over), both empty when it is the model the chain was on;
    `chain` is the chain's spec and `at` the wall time of the change (`time.time()`)."""

    kind: Literal["chosen"] = "chosen"
    model: str
    chain: str
    instead_of: str = ""
    why: str = ""
    at: float = 0.0


ModelEvent = (
    TextDelta
    | ThinkingDelta
    | ThinkingDone
    | ToolCallReady
    | UsageReported
    | StreamEnded
    | Waiting
    | ModelChosen
)


class Model(Protocol):
    """A language model. `stream` opens one call; leaving the context closes it
    (and its HTTP stream) whether the caller finished, failed or was cancelled."""

    @property
    def name(self) -> str: ...

    def stream(
        self, request: ModelRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[ModelEvent]]: ...


async def collect(events: AsyncIterator[ModelEvent]) -> AssistantMessage:
    """Fold a stream of events into the assistant message it describes."""
    text: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[Thinking] = []
    usage: Usage | None = None
    stop_reason: str | None = None
    async for event in events:
        match event:
            case TextDelta(text=t):
                text.append(t)
            case ToolCallReady(call=call):
                calls.append(call)
            case ThinkingDone(block=block):
                thinking.append(block)
            case UsageReported(usage=u):
                usage = u if usage is None else usage + u
            case StreamEnded(stop_reason=reason):
                stop_reason = reason
            case ThinkingDelta():
                pass
    return AssistantMessage(
        text="".join(text),
        tool_calls=unique_call_ids(calls),
        thinking=tuple(thinking),
        usage=usage,
        stop_reason=stop_reason,
    )


def unique_call_ids(calls: list[ToolCall]) -> tuple[ToolCall, ...]:
    """The calls, with an empty or repeated id (some local servers send them) replaced by
    one unique in the reply, so that each result answers exactly one call on the wire."""
    seen: set[str] = set()
    out = []
    for index, call in enumerate(calls):
        if not call.id or call.id in seen:
            taken = {c.id for c in calls} | seen
            new_id = f"{call.id or 'call'}_{index}"
            while new_id in taken:
                new_id += "_"
            call = msgspec.structs.replace(call, id=new_id)
        seen.add(call.id)
        out.append(call)
    return tuple(out)


S = TypeVar("S")


class WireCache(Generic[S]):
    """What an adapter translated of one agent's context, so each message is translated
    once. `S` is the adapter's translation so far (the wire messages, say): a request
    made from a `MessageView` of the same context only feeds it the messages added since;
    any other request starts it afresh."""

    def __init__(self, fresh: Callable[[], S]) -> None:
        self._fresh = fresh
        self._base: list[Message] | None = None
        self._done = 0
        self.state = fresh()

    def feed(self, messages: Sequence[Message]) -> tuple[S, Sequence[Message]]:
        """The translation state, and the messages of `messages` not yet in it."""
        if (
            isinstance(messages, MessageView)
            and messages.base is self._base
            and self._done <= len(messages)
        ):
            new: Sequence[Message] = tuple(islice(messages.base, self._done, len(messages)))
        else:
            self.state = self._fresh()
            self._base = messages.base if isinstance(messages, MessageView) else None
            new = messages
        self._done = len(messages)
        return self.state, new


class AgentWireCaches(Generic[S]):
    """An adapter's `WireCache` per agent, made on an agent's first request."""

    def __init__(self, fresh: Callable[[], S]) -> None:
        self._fresh = fresh
        self._caches: dict[str, WireCache[S]] = {}

    def __getitem__(self, agent: str) -> WireCache[S]:
        cache = self._caches.get(agent)
        if cache is None:
            cache = self._caches[agent] = WireCache(self._fresh)
        return cache
