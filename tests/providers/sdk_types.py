"""Check what we send and what our fake servers stream against the official SDKs' own
types. Only tests import the SDKs; the runtime never does."""

from __future__ import annotations

from typing import Any

import orjson
from anthropic.types import ErrorResponse, RawMessageStreamEvent
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from pydantic import TypeAdapter

_OPENAI_REQUEST: TypeAdapter[Any] = TypeAdapter(CompletionCreateParamsStreaming)
_RESPONSES_REQUEST: TypeAdapter[Any] = TypeAdapter(ResponseCreateParamsStreaming)
_ANTHROPIC_REQUEST: TypeAdapter[Any] = TypeAdapter(MessageCreateParamsStreaming)
_ANTHROPIC_EVENT: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)


def _materialize(value: Any) -> Any:
    """Validated TypedDicts hold lazy iterators for `Iterable` fields: run them (that is
    when their items are validated) and turn them into lists."""
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, list | tuple) or hasattr(value, "__next__"):
        return [_materialize(v) for v in value]
    return value


def _check_request(adapter: TypeAdapter[Any], body: dict[str, Any]) -> None:
    validated = _materialize(adapter.validate_python(body))
    # TypedDict validation drops unknown keys: a difference means we sent a key (or a
    # shape) the SDK does not know.
    assert validated == body


def check_openai_request(body: dict[str, Any]) -> None:
    _check_request(_OPENAI_REQUEST, body)


def check_responses_request(body: dict[str, Any]) -> None:
    _check_request(_RESPONSES_REQUEST, body)


def check_anthropic_request(body: dict[str, Any]) -> None:
    _check_request(_ANTHROPIC_REQUEST, body)


# --- stream builders: every event a test server sends is first checked --------------


def openai_chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    no_choices: bool = False,
) -> bytes:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "test-model",
        "choices": []
        if no_choices
        else [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    if usage is not None:
        chunk["usage"] = usage
    ChatCompletionChunk.model_validate(chunk)
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def openai_usage(prompt: int, completion: int, cached: int = 0) -> bytes:
    return openai_chunk(
        usage={
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
        no_choices=True,
    )


OPENAI_DONE = b"data: [DONE]\n\n"


def anthropic_event(payload: dict[str, Any]) -> bytes:
    kind = payload["type"]
    if kind == "error":
        ErrorResponse.model_validate(payload)
    elif kind != "ping":
        _ANTHROPIC_EVENT.validate_python(payload)
    return f"event: {kind}\n".encode() + b"data: " + orjson.dumps(payload) + b"\n\n"


def message_start(input_tokens: int = 10, cache_read: int = 0, cache_write: int = 0) -> bytes:
    return anthropic_event(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "output_tokens": 1,
                    "cache_read_input_tokens": cache_read,
                    "cache_creation_input_tokens": cache_write,
                },
            },
        }
    )


def block_start(index: int, block: dict[str, Any]) -> bytes:
    return anthropic_event({"type": "content_block_start", "index": index, "content_block": block})


def block_delta(index: int, delta: dict[str, Any]) -> bytes:
    return anthropic_event({"type": "content_block_delta", "index": index, "delta": delta})


def block_stop(index: int) -> bytes:
    return anthropic_event({"type": "content_block_stop", "index": index})


def message_delta(stop_reason: str, output_tokens: int) -> bytes:
    return anthropic_event(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        }
    )


MESSAGE_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
PING = b'event: ping\ndata: {"type": "ping"}\n\n'


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_error(kind: str, message: str, **fields: Any) -> dict[str, Any]:
    """An OpenAI error body: its `type`, `message` and `fields` (`code`, `param`)."""
    return {"error": {"message": message, "type": kind, **fields}}


def openai_call_delta(
    index: int, *, id: str | None = None, name: str | None = None, arguments: str | None = None
) -> dict[str, Any]:
    """One entry of a chunk's `delta.tool_calls`."""
    function = {k: v for k, v in (("name", name), ("arguments", arguments)) if v is not None}
    delta: dict[str, Any] = {"index": index, "function": function}
    if id is not None:
        delta |= {"id": id, "type": "function"}
    return delta


# --- whole replies: a text, or one tool call -----------------------------------------


def openai_text(
    text: str, *, usage: tuple[int, int] | None = None, finish: str = "stop"
) -> list[bytes]:
    """An OpenAI stream saying `text` (its role first, then the text, then the finish:
    "length" for a reply cut at its output limit), with a usage chunk of (prompt,
    completion) tokens when given."""
    return [
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"content": text}),
        openai_chunk({}, finish=finish),
        *([openai_usage(*usage)] if usage else []),
        OPENAI_DONE,
    ]


def openai_tool_call(
    call_id: str,
    name: str,
    arguments: str,
    *,
    usage: tuple[int, int] | None = None,
    finish: str = "tool_calls",
) -> list[bytes]:
    """An OpenAI stream calling one tool with `arguments` (JSON text)."""
    return openai_tool_calls([(call_id, name, arguments)], usage=usage, finish=finish)


def openai_tool_calls(
    calls: list[tuple[str, str, str]],
    *,
    usage: tuple[int, int] | None = None,
    finish: str = "tool_calls",
) -> list[bytes]:
    """An OpenAI stream making `calls` (id, tool, JSON arguments), each in a chunk of its own."""
    deltas = [
        openai_call_delta(i, id=call_id, name=name, arguments=arguments)
        for i, (call_id, name, arguments) in enumerate(calls)
    ]
    return [
        openai_chunk({"role": "assistant", "content": None}),
        *(openai_chunk({"tool_calls": [delta]}) for delta in deltas),
        openai_chunk({}, finish=finish),
        *([openai_usage(*usage)] if usage else []),
        OPENAI_DONE,
    ]


def anthropic_text(
    text: str, *, input_tokens: int = 10, output_tokens: int = 3, stop: str = "end_turn"
) -> list[bytes]:
    """An Anthropic stream of one text block saying `text` (`stop` "max_tokens" for a
    reply cut at its output limit)."""
    return [
        message_start(input_tokens=input_tokens),
        block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": text}),
        block_stop(0),
        message_delta(stop, output_tokens),
        MESSAGE_STOP,
    ]


def anthropic_tool_use(
    call_id: str,
    name: str,
    arguments: str,
    *,
    input_tokens: int = 10,
    output_tokens: int = 10,
    stop: str = "tool_use",
) -> list[bytes]:
    """An Anthropic stream of one tool_use block calling `name` with `arguments` (JSON
    text, in one delta)."""
    calls = [(call_id, name, arguments)]
    return anthropic_tool_uses(
        calls, input_tokens=input_tokens, output_tokens=output_tokens, stop=stop
    )


def anthropic_tool_uses(
    calls: list[tuple[str, str, str]],
    *,
    input_tokens: int = 10,
    output_tokens: int = 10,
    stop: str = "tool_use",
) -> list[bytes]:
    """An Anthropic stream of a tool_use block for each of `calls` (id, tool, JSON
    arguments in one delta)."""
    events = [message_start(input_tokens=input_tokens)]
    for i, (call_id, name, arguments) in enumerate(calls):
        use = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events += [
            block_start(i, use),
            block_delta(i, {"type": "input_json_delta", "partial_json": arguments}),
            block_stop(i),
        ]
    return [*events, message_delta(stop, output_tokens), MESSAGE_STOP]
