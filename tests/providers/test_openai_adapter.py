"""The OpenAI-compatible adapter against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import dataclasses

import httpx
import orjson
import pytest
from adapter_setup import REQUEST, events_of, http_options
from provider_server import LoopbackServer, Reply, Sleeps, Stall
from sdk_types import OPENAI_DONE, openai_call_delta, openai_chunk, openai_usage

from orchestrator import Thinking, ToolCall, Usage
from orchestrator.models import (
    StreamEnded,
    TextDelta,
    ThinkingDelta,
    ThinkingDone,
    ToolCallReady,
    UsageReported,
)
from orchestrator.models.http import Timeouts
from orchestrator.models.openai import OpenAIChatModel, OpenAIEndpoint, to_wire


def make_model(
    server: LoopbackServer,
    client: httpx.AsyncClient,
    sleeps: Sleeps,
    *,
    timeouts: Timeouts | None = None,
    provider: str = "openai-compatible",
) -> OpenAIChatModel:
    endpoint = OpenAIEndpoint(
        provider=provider, model="test-model", base_url=server.url + "/v1", api_key="sk-test"
    )
    return OpenAIChatModel(endpoint, http_options(client, sleeps, timeouts=timeouts))


def call_chunk(*deltas: dict[str, object]) -> bytes:
    return openai_chunk({"tool_calls": list(deltas)})


async def test_text_stream_with_usage_from_the_final_chunk(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(
        Reply.sse(
            [
                openai_chunk({"role": "assistant", "content": ""}),
                b": keep-alive comment\n\n",
                openai_chunk({"content": "Hello, "}),
                openai_chunk({"content": "wörld ✓"}),
                openai_chunk({}, finish="stop"),
                openai_usage(prompt=120, completion=7, cached=100),
                OPENAI_DONE,
            ]
        )
    )
    events = await events_of(make_model(server, client, sleeps))
    assert events == [
        TextDelta(text="Hello, "),
        TextDelta(text="wörld ✓"),
        UsageReported(usage=Usage(input_tokens=20, output_tokens=7, cache_read_tokens=100)),
        StreamEnded(stop_reason="end_turn"),
    ]
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.json() == to_wire(REQUEST, model="test-model")
    assert request.json()["stream_options"] == {"include_usage": True}
    assert sleeps.calls == []


async def test_parallel_tool_calls_interleaved_by_index(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(
        Reply.sse(
            [
                openai_chunk({"role": "assistant", "content": None}),
                call_chunk(openai_call_delta(0, id="call_a", name="read_file", arguments="")),
                call_chunk(openai_call_delta(1, id="call_b", name="read_file", arguments='{"pa')),
                call_chunk(openai_call_delta(0, arguments='{"path": ')),
                call_chunk(openai_call_delta(1, arguments='th": "b.txt"}')),
                call_chunk(openai_call_delta(0, arguments='"a.txt"}')),
                openai_chunk({}, finish="tool_calls"),
                openai_usage(prompt=50, completion=30),
                OPENAI_DONE,
            ]
        )
    )
    events = await events_of(make_model(server, client, sleeps))
    assert events == [
        ToolCallReady(call=ToolCall(id="call_a", name="read_file", arguments='{"path": "a.txt"}')),
        ToolCallReady(call=ToolCall(id="call_b", name="read_file", arguments='{"path": "b.txt"}')),
        UsageReported(usage=Usage(input_tokens=50, output_tokens=30)),
        StreamEnded(stop_reason="tool_use"),
    ]


async def test_ollama_whole_tool_calls_and_reasoning(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    """Ollama sends each call whole in one chunk (here both at index 0) and its
    reasoning in `reasoning`; vLLM says `reasoning_content`."""
    whole = [
        openai_call_delta(0, id=f"call_{n}", name="read_file", arguments=f'{{"path": "{n}"}}')
        for n in ("x", "y")
    ]
    server.add(
        Reply.sse(
            [
                openai_chunk({"role": "assistant", "content": "", "reasoning": "Let me "}),
                openai_chunk({"content": "", "reasoning_content": "look."}),
                openai_chunk({"tool_calls": [whole[0]]}),
                openai_chunk({"tool_calls": [whole[1]]}),
                openai_chunk({}, finish="tool_calls"),
                OPENAI_DONE,
            ]
        )
    )
    events = await events_of(make_model(server, client, sleeps, provider="ollama"))
    assert events == [
        ThinkingDelta(text="Let me "),
        ThinkingDelta(text="look."),
        ThinkingDone(block=Thinking(text="Let me look.", source="ollama:test-model")),
        ToolCallReady(call=ToolCall(id="call_x", name="read_file", arguments='{"path": "x"}')),
        ToolCallReady(call=ToolCall(id="call_y", name="read_file", arguments='{"path": "y"}')),
        StreamEnded(stop_reason="tool_use"),
    ]


async def test_malformed_tool_arguments_arrive_raw(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    bad = '{"path": "a.txt", oops'
    server.add(
        Reply.sse(
            [
                call_chunk(openai_call_delta(0, id="c1", name="read_file", arguments=bad[:9])),
                call_chunk(openai_call_delta(0, arguments=bad[9:])),
                openai_chunk({}, finish="tool_calls"),
                OPENAI_DONE,
            ]
        )
    )
    events = await events_of(make_model(server, client, sleeps))
    assert ToolCallReady(call=ToolCall(id="c1", name="read_file", arguments=bad)) in events


async def test_length_stop_leaves_an_unfinished_call_that_is_still_reported(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(
        Reply.sse(
            [
                call_chunk(openai_call_delta(0, id="c1", name="read_file", arguments='{"pa')),
                openai_chunk({}, finish="length"),
                OPENAI_DONE,
            ]
        )
    )
    events = await events_of(make_model(server, client, sleeps))
    assert events == [
        ToolCallReady(call=ToolCall(id="c1", name="read_file", arguments='{"pa')),
        StreamEnded(stop_reason="max_tokens"),
    ]


async def test_done_marker_ends_the_call_without_waiting_for_eof(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(
        Reply.sse(
            [openai_chunk({"content": "ok"}), openai_chunk({}, finish="stop"), OPENAI_DONE],
            tail=[Stall()],
        )
    )
    events = await events_of(make_model(server, client, sleeps, timeouts=Timeouts(idle=30)))
    assert events[-1] == StreamEnded(stop_reason="end_turn")


def test_request_translation_sends_stop_temperature_and_named_tool_choice() -> None:
    request = dataclasses.replace(
        REQUEST, tool_choice="read_file", max_tokens=50, temperature=0.2, stop=("X",)
    )
    body = to_wire(request, model="m", max_tokens_field="max_completion_tokens")
    assert body["tool_choice"] == {"type": "function", "function": {"name": "read_file"}}
    assert body["max_completion_tokens"] == 50
    assert (body["temperature"], body["stop"]) == (0.2, ["X"])
    assert orjson.loads(orjson.dumps(body)) == body


@pytest.mark.parametrize("tools", [True, False])
def test_tool_choice_is_only_sent_with_tools(tools: bool) -> None:
    request = REQUEST if tools else dataclasses.replace(REQUEST, tools=())
    assert ("tool_choice" in to_wire(request, model="m")) is tools
