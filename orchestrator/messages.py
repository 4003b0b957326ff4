"""Provider-neutral conversation items.

Every item is a frozen msgspec `Struct` (a `Value`); `Message` is the union over them,
tagged by `role`, that contexts, the journal and the provider adapters all share.

Why msgspec and not pydantic, which the rest of the configuration uses: a resumed session
builds one of these for nearly every line of its journal, and msgspec decodes a line into
its typed, validated structs in less time than `orjson.loads` takes to build plain dicts
of it, where pydantic took about 2.5 times as long (docs/performance.md, Load). Structs are
built by our own code without validation (their types are checked by mypy), and validated
whenever they are read from JSON.
"""

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any, Literal, overload

import msgspec


class Value(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """A frozen struct that leaves its defaults out of JSON (as the journal wants), and
    that pydantic models can hold as a field (validated by msgspec, dumped in full by
    `plain`)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        def validate(value: Any) -> Any:
            return value if isinstance(value, cls) else msgspec.convert(value, cls)

        return core_schema.no_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(plain),
        )


def plain(value: Any) -> Any:
    """`value` as plain JSON data with every field, by its name in Python, defaults
    included (for `--json` output and `sessions show`; the journal leaves defaults out),
    and a tagged struct's tag under its tag field."""
    if isinstance(value, msgspec.Struct):
        config = value.__struct_config__
        out: dict[str, Any] = {}
        if config.tag_field is not None:
            out[config.tag_field] = config.tag
        for name in value.__struct_fields__:
            out[name] = plain(getattr(value, name))
        return out
    if isinstance(value, (tuple, list)):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


class Usage(Value, frozen=True):
    """Tokens spent by one model call (or a sum of calls)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(  # by position: a resume adds one for every model call
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


class ToolCall(Value, frozen=True):
    """A call the model asked for. `arguments` is the raw JSON text the model produced:
    it may be malformed, and the turn loop turns that into an error result.

    `cut`: set on a call the output limit cut off even when asked again with a larger
    limit (agent/recovery.py): how many characters of its arguments had come. Such a call
    is journaled with `{}` for arguments, never runs, and its result tells the model it
    was too long to emit."""

    id: str
    name: str
    arguments: str = "{}"
    cut: int | None = None


class Thinking(Value, frozen=True):
    """A reasoning block some providers return and require back verbatim (Anthropic's
    signed thinking, the Responses API's encrypted reasoning items). `source` names the
    model that made it, as `Model.name` does (`anthropic:claude-...`): only that model is
    sent it back (docs/providers.md, Moving between providers). None in sessions
    recorded before it was kept: each adapter then tells its own blocks by their shape."""

    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    source: str | None = None


class _Message(Value, frozen=True, tag_field="role"):
    """The base of the four kinds of message: `role` is the tag a message is written with."""

    @property
    def role(self) -> str:
        tag = self.__struct_config__.tag
        assert isinstance(tag, str)
        return tag


class _Said(_Message, frozen=True):
    """A message that is only its text: the system prompt, or what the user said."""

    content: str

    def chars(self) -> int:
        return len(self.content) + 16


class SystemMessage(_Said, frozen=True, tag="system"):
    pass


class UserMessage(_Said, frozen=True, tag="user"):
    pass


class AssistantMessage(_Message, frozen=True, tag="assistant"):
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    thinking: tuple[Thinking, ...] = ()
    usage: Usage | None = None
    stop_reason: str | None = None

    @property
    def content(self) -> str:
        """Its text: every kind of message has `content`."""
        return self.text

    def chars(self) -> int:
        # Thinking counts by its text (replayed to the model that made it, it is read
        # again); a signature or an encrypted item is opaque, and not counted.
        size = len(self.text) + 16 + sum(len(block.text) for block in self.thinking)
        for call in self.tool_calls:
            size += len(call.name) + len(call.arguments) + 32
        return size


RESULT_OVERHEAD = 48
"""Characters a tool result costs beyond its content, in `message_chars`."""

ToolStatus = Literal["ok", "error", "cancelled", "interrupted", "unapproved"]
"""How a call ended. `unapproved`: it needed a person's approval and nobody could be asked
(a run with no terminal and no `--yes`), so it did not run; the session's outcome counts
these (session-format.md)."""


class ToolResult(_Message, frozen=True, tag="tool"):
    call_id: str
    name: str
    status: ToolStatus = "ok"
    content: str = ""
    # The workspace paths the call changed, as the program saw them (not the model): what
    # the completion check counts. Never sent to a model; `content` may name them too,
    # for the model, but nothing reads them back from there.
    changed: tuple[str, ...] = ()
    # The call's ref in the session ("<seq>.<index>", state/context.py): what `recall`
    # reads a pruned output back by. Never sent to a model.
    ref: str = ""

    def chars(self) -> int:
        return len(self.content) + RESULT_OVERHEAD


Message = SystemMessage | UserMessage | AssistantMessage | ToolResult


def message_chars(message: Message) -> int:
    """A message's size in characters, as a model would read it (for token estimates)."""
    return message.chars()


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
    def of(cls, messages: Sequence[Message]) -> "MessageView":
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
