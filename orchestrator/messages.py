"""Provider-neutral conversation items.

Every item is a frozen pydantic model; `Message` is the discriminated union over them
(on `role`) that contexts, the journal and the provider adapters all share.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Annotated, Literal, overload

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


RESULT_OVERHEAD = 48
"""Characters a tool result costs beyond its content, in `message_chars`."""


def message_chars(message: Message) -> int:
    """A message's size in characters, as a model would read it (for token estimates)."""
    match message:
        case SystemMessage(content=content) | UserMessage(content=content):
            return len(content) + 16
        case AssistantMessage(text=text, tool_calls=calls):
            return len(text) + 16 + sum(len(c.name) + len(c.arguments) + 32 for c in calls)
        case ToolResult(content=content):
            return len(content) + RESULT_OVERHEAD


class MessageView(Sequence[Message]):
    """The first `len` messages of an append-only list, without copying them.

    Adapters keep the wire form of what they already translated, keyed by `base` (the
    list) and extended by what follows; `chars` is the size of the viewed messages."""

    __slots__ = ("_base", "_len", "_marks")

    def __init__(self, base: list[Message], length: int, marks: list[int] | None = None) -> None:
        self._base = base
        self._len = length
        self._marks = marks

    @classmethod
    def of(cls, messages: Sequence[Message]) -> MessageView:
        """A view of any messages (a copy unless they are a view already)."""
        if isinstance(messages, MessageView):
            return messages
        items = list(messages)
        return cls(items, len(items))

    @property
    def base(self) -> list[Message]:
        return self._base

    @property
    def chars(self) -> int:
        if self._marks is not None and len(self._marks) >= self._len:
            return self._marks[self._len - 1] if self._len else 0
        return sum(message_chars(m) for m in self)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | Sequence[Message]:
        if isinstance(index, slice):
            return tuple(self._base[: self._len][index])
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("message index out of range")
        return self._base[index]

    def __iter__(self) -> Iterator[Message]:
        return islice(self._base, self._len)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == self._len and all(
                a == b for a, b in zip(self, other, strict=False)
            )
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"MessageView({list(self)!r})"
