"""The Anthropic Messages adapter against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import dataclasses

import httpx
from adapter_setup import REQUEST, events_of, http_options
from provider_server import LoopbackServer, Reply, Sleeps
from sdk_types import (
    MESSAGE_STOP,
    PING,
    block_delta,
    block_start,
    block_stop,
    message_delta,
    message_start,
)

from orchestrator import (
    AssistantMessage,
    Message,
    ModelRequest,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from orchestrator.models import (
    StreamEnded,
    TextDelta,
    ThinkingDelta,
    ThinkingDone,
    ToolCallReady,
    UsageReported,
)
from orchestrator.models.anthropic import AnthropicEndpoint, AnthropicModel, to_wire


def make_model(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps, **endpoint: object
) -> AnthropicModel:
    ep = AnthropicEndpoint(model="claude-test", api_key="sk-ant-test", base_url=server.url)
    return AnthropicModel(dataclasses.replace(ep, **endpoint), http_options(client, sleeps))  # type: ignore[arg-type]


def text_block(index: int, *parts: str) -> list[bytes]:
    return [
        block_start(index, {"type": "text", "text": ""}),
        *(block_delta(index, {"type": "text_delta", "text": p}) for p in parts),
        block_stop(index),
    ]


def tool_block(index: int, call_id: str, *json_parts: str, stop: bool = True) -> list[bytes]:
    # The start carries `input: {}` and the first partial_json is "", as the API does.
    return [
        block_start(index, {"type": "tool_use", "id": call_id, "name": "read_file", "input": {}}),
        *(
            block_delta(index, {"type": "input_json_delta", "partial_json": p})
            for p in ("", *json_parts)
        ),
        *([block_stop(index)] if stop else []),
    ]


async def test_text_stream_with_pings_and_usage(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(
        Reply.sse(
            [
                message_start(input_tokens=12, cache_read=100, cache_write=50),
                PING,
                *text_block(0, "Hello", ", wörld ✓"),
                PING,
                message_delta("end_turn", output_tokens=9),
                MESSAGE_STOP,
            ]
        )
    )
    events = await events_of(make_model(server, client, sleeps))
    assert events == [
        TextDelta(text="Hello"),
        TextDelta(text=", wörld ✓"),
        UsageReported(
            usage=Usage(
                input_tokens=12, output_tokens=9, cache_read_tokens=100, cache_write_tokens=50
            )
        ),
        StreamEnded(stop_reason="end_turn"),
    ]
    [request] = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert request.json() == to_wire(REQUEST, model="claude-test", caching="auto")
    assert request.json()["max_tokens"] == 8192


async def test_text_then_parallel_tool_calls(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(
        Reply.sse(
            [
                message_start(),
                *text_block(0, "Reading both."),
                *tool_block(1, "toolu_a", '{"path":', ' "a.txt"}'),
                *tool_block(2, "toolu_b"),  # no arguments at all
                message_delta("tool_use", output_tokens=40),
                MESSAGE_STOP,
            ]
        )
    )
    events = await events_of(make_model(server, client, sleeps))
    assert events == [
        TextDelta(text="Reading both."),
        ToolCallReady(call=ToolCall(id="toolu_a", name="read_file", arguments='{"path": "a.txt"}')),
        ToolCallReady(call=ToolCall(id="toolu_b", name="read_file", arguments="{}")),
        UsageReported(usage=Usage(input_tokens=10, output_tokens=40)),
        StreamEnded(stop_reason="tool_use"),
    ]


async def test_thinking_blocks_are_kept_with_their_signature(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(
        Reply.sse(
            [
                message_start(),
                block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
                block_delta(0, {"type": "thinking_delta", "thinking": "The user "}),
                block_delta(0, {"type": "thinking_delta", "thinking": "greets me."}),
                block_delta(0, {"type": "signature_delta", "signature": "c2ln"}),
                block_stop(0),
                block_start(1, {"type": "redacted_thinking", "data": "ENCRYPTED"}),
                block_stop(1),
                *text_block(2, "Hi!"),
                message_delta("end_turn", output_tokens=20),
                MESSAGE_STOP,
            ]
        )
    )
    events = await events_of(make_model(server, client, sleeps, thinking_budget=2048))
    assert events[:5] == [
        ThinkingDelta(text="The user "),
        ThinkingDelta(text="greets me."),
        # Each marked as this model's, the one it can go back to.
        ThinkingDone(
            block=Thinking(
                text="The user greets me.", signature="c2ln", source="anthropic:claude-test"
            )
        ),
        ThinkingDone(block=Thinking(redacted="ENCRYPTED", source="anthropic:claude-test")),
        TextDelta(text="Hi!"),
    ]
    body = server.requests[0].json()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] > 2048


async def test_max_tokens_stop_reports_unfinished_tool_json_raw(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(
        Reply.sse(
            [
                message_start(),
                *tool_block(0, "toolu_a", '{"path": "a.t', stop=True),
                *tool_block(1, "toolu_b", '{"pa', stop=False),  # never closed
                message_delta("max_tokens", output_tokens=8192),
                MESSAGE_STOP,
            ]
        )
    )
    events = await events_of(make_model(server, client, sleeps))
    assert events == [
        ToolCallReady(call=ToolCall(id="toolu_a", name="read_file", arguments='{"path": "a.t')),
        ToolCallReady(call=ToolCall(id="toolu_b", name="read_file", arguments='{"pa')),
        UsageReported(usage=Usage(input_tokens=10, output_tokens=8192)),
        StreamEnded(stop_reason="max_tokens"),
    ]


async def test_unknown_event_types_and_deltas_are_ignored(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(
        Reply.sse(
            [
                message_start(),
                b'event: something_new\ndata: {"type": "something_new"}\n\n',
                *text_block(0, "ok"),
                message_delta("end_turn", output_tokens=1),
                MESSAGE_STOP,
            ]
        )
    )
    events = await events_of(make_model(server, client, sleeps))
    assert events[0] == TextDelta(text="ok")


def test_thinking_goes_back_only_to_the_model_that_made_it() -> None:
    signed = Thinking(text="t", signature="c2ln", source="anthropic:claude-test")
    redacted = Thinking(redacted="RU5D", source="anthropic:claude-test")
    older = Thinking(text="t", signature="b2xk")  # recorded before thinking named its model
    reply = AssistantMessage(text="ok", thinking=(signed, redacted, older))
    request = ModelRequest(messages=(UserMessage(content="hi"), reply))

    def sent(model: str, provider: str = "anthropic") -> list[str]:
        body = to_wire(request, model=model, provider=provider)
        return [b["type"] for b in body["messages"][1]["content"]]

    assert sent("claude-test") == ["thinking", "redacted_thinking", "thinking", "text"]
    # Another model, or the same model behind another provider, does not take them.
    assert sent("claude-other") == ["thinking", "text"]
    assert sent("claude-test", provider="proxy") == ["thinking", "text"]


def test_text_of_only_whitespace_is_left_out() -> None:
    # Chat models often say "\n\n" before their calls; the Messages API refuses such a block.
    call = ToolCall(id="call_1", name="read_file", arguments="{}")
    reply = AssistantMessage(text="\n\n", tool_calls=(call,))
    result = ToolResult(call_id="call_1", name="read_file", content=" \n")
    body = to_wire(ModelRequest(messages=(UserMessage(content="hi"), reply, result)), model="m")
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "call_1", "name": "read_file", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1"}]},
    ]


def test_thinking_is_off_while_the_last_tool_round_is_another_models() -> None:
    call = ToolCall(id="call_1", name="read_file", arguments="{}")
    theirs = AssistantMessage(tool_calls=(call,))  # no thinking this model can take
    result = ToolResult(call_id="call_1", name="read_file", content="x")
    context: list[Message] = [UserMessage(content="hi"), theirs, result]

    def thinks() -> bool:
        request = ModelRequest(messages=tuple(context))
        return "thinking" in to_wire(request, model="m", thinking_budget=2048)

    assert not thinks()
    context.append(AssistantMessage(text="Done."))  # that tool loop is over
    context.append(UserMessage(content="Next."))
    assert thinks()
    own = Thinking(text="t", signature="c2ln", source="anthropic:m")
    context += [AssistantMessage(tool_calls=(call,), thinking=(own,)), result]
    assert thinks()
