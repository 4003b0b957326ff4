"""Provider-neutral conversation items.

Every item is a frozen pydantic model; `Message` is the discriminated union over them
(on `role`) that contexts, the journal and the provider adapters all share.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter


class Usage(BaseModel, frozen=True):
    """Tokens spent by one model call (or a sum of calls)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


class ToolCall(BaseModel, frozen=True):
    """A call the model asked for. `arguments` is the raw JSON text the model produced:
    it may be malformed, and the turn loop turns that into an error result."""

    id: str
    name: str
    arguments: str = "{}"


class Thinking(BaseModel, frozen=True):
    """A reasoning block some providers return and require back verbatim (Anthropic)."""

    text: str = ""
    signature: str | None = None
    redacted: str | None = None


class SystemMessage(BaseModel, frozen=True):
    role: Literal["system"] = "system"
    content: str


class UserMessage(BaseModel, frozen=True):
    role: Literal["user"] = "user"
    content: str


class AssistantMessage(BaseModel, frozen=True):
    role: Literal["assistant"] = "assistant"
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    thinking: tuple[Thinking, ...] = ()
    usage: Usage | None = None
    stop_reason: str | None = None


ToolStatus = Literal["ok", "error", "cancelled", "interrupted"]


class ToolResult(BaseModel, frozen=True):
    role: Literal["tool"] = "tool"
    call_id: str
    name: str
    status: ToolStatus = "ok"
    content: str = ""


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolResult,
    Field(discriminator="role"),
]

MESSAGE_ADAPTER: TypeAdapter[Message] = TypeAdapter(Message)
MESSAGES_ADAPTER: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def unanswered_calls(messages: list[Message] | tuple[Message, ...]) -> list[ToolCall]:
    """Tool calls in `messages` that have no result yet, in the order they were made."""
    answered = {m.call_id for m in messages if isinstance(m, ToolResult)}
    return [
        call
        for m in messages
        if isinstance(m, AssistantMessage)
        for call in m.tool_calls
        if call.id not in answered
    ]
