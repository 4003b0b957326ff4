"""The one model protocol every adapter implements, and the events a stream yields."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, Field

from orchestrator.messages import AssistantMessage, Message, Thinking, ToolCall, Usage


class ToolSpec(BaseModel, frozen=True):
    """What the model sees of a tool: its name, description and JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


class ModelRequest(BaseModel, frozen=True):
    """One call to a model.

    `agent` and `role` name who is asking (the scripted model picks its replies by
    them); `step` counts this agent's earlier model calls, so a scripted model knows its
    place even after a resume or a compaction.
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    agent: str = "main"
    role: str = "main"
    step: int = 0
    tool_choice: Literal["auto", "none", "required"] | str = "auto"
    max_tokens: int | None = None
    temperature: float | None = None
    stop: tuple[str, ...] = ()


class TextDelta(BaseModel, frozen=True):
    kind: Literal["text"] = "text"
    text: str


class ThinkingDelta(BaseModel, frozen=True):
    """Reasoning text as it streams (shown to people, not sent back by itself)."""

    kind: Literal["thinking"] = "thinking"
    text: str


class ThinkingDone(BaseModel, frozen=True):
    """A whole reasoning block, kept so it can be replayed to providers that need it."""

    kind: Literal["thinking_done"] = "thinking_done"
    block: Thinking


class ToolCallReady(BaseModel, frozen=True):
    """A tool call whose arguments have fully arrived (possibly malformed JSON)."""

    kind: Literal["tool_call"] = "tool_call"
    call: ToolCall


class UsageReported(BaseModel, frozen=True):
    kind: Literal["usage"] = "usage"
    usage: Usage


class StreamEnded(BaseModel, frozen=True):
    kind: Literal["end"] = "end"
    stop_reason: str | None = None


ModelEvent = Annotated[
    TextDelta | ThinkingDelta | ThinkingDone | ToolCallReady | UsageReported | StreamEnded,
    Field(discriminator="kind"),
]


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
        tool_calls=tuple(calls),
        thinking=tuple(thinking),
        usage=usage,
        stop_reason=stop_reason,
    )
