"""The OpenAI Responses adapter against a real HTTP server on 127.0.0.1, which speaks the
Responses event stream (built from the SDK's own event classes) in odd-sized pieces."""

from __future__ import annotations

import argparse
import dataclasses
import io
from pathlib import Path

import httpx
import msgspec
import orjson
import pytest
from adapter_setup import READ_FILE, events_of, http_options
from provider_server import LoopbackServer, Reply, Sleeps, Stall, context_too_long
from responses_events import Stream, reasoning_item, usage
from sdk_types import openai_error

from orchestrator import (
    AssistantMessage,
    SystemMessage,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from orchestrator.cli.models import run_models
from orchestrator.errors import (
    ContextTooLong,
    ProviderBadRequest,
    ProviderRateLimited,
    ProviderTransient,
)
from orchestrator.messages import Message, MessageView
from orchestrator.models import (
    ModelEvent,
    ModelRequest,
    StreamEnded,
    TextDelta,
    ThinkingDelta,
    ThinkingDone,
    ToolCallReady,
    UsageReported,
    collect,
)
from orchestrator.models.anthropic import to_wire as anthropic_to_wire
from orchestrator.models.base import Waiting, WireCache
from orchestrator.models.openai_responses import (
    Items,
    OpenAIResponsesModel,
    ResponsesEndpoint,
    to_wire,
)
from orchestrator.models.openai_responses_stream import ResponsesStreamDecoder
from orchestrator.models.sse import SSEDecoder

TOOLS = (READ_FILE,)
REQUEST = ModelRequest(
    messages=(SystemMessage(content="be brief"), UserMessage(content="hi")),
    tools=TOOLS,
    cache_key="session-1/main",
)


def make_model(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> OpenAIResponsesModel:
    endpoint = ResponsesEndpoint(model="gpt-test", base_url=server.url + "/v1", api_key="sk-test")
    return OpenAIResponsesModel(endpoint, http_options(client, sleeps))


async def test_text_streams_and_the_request_is_unstored_with_a_cache_key(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    stream = Stream().created().text("Hello, ", "wörld ✓").completed(usage(120, 7, cached=100))
    server.add(Reply.sse(stream.events))
    events = await events_of(make_model(server, client, sleeps), REQUEST)
    assert events == [
        TextDelta(text="Hello, "),
        TextDelta(text="wörld ✓"),
        UsageReported(usage=Usage(input_tokens=20, output_tokens=7, cache_read_tokens=100)),
        StreamEnded(stop_reason="end_turn"),
    ]
    (sent,) = server.requests
    assert sent.path == "/v1/responses"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.json() == {
        "model": "gpt-test",
        "input": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
        ],
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "tools": [
            {
                "type": "function",
                "name": "read_file",
                "description": "Read a file",
                "parameters": TOOLS[0].parameters,
                "strict": False,
            }
        ],
        "tool_choice": "auto",
        "prompt_cache_key": "session-1/main",
    }


async def test_parallel_calls_reasoning_and_usage_then_results_go_back_with_the_reasoning(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    thought = reasoning_item(1, summary="Two files to read.")
    first = (
        Stream()
        .created()
        .reasoning(thought)
        .call("call_a", "read_file", '{"pa', 'th": "a.txt"}')
        .call("call_b", "read_file", '{"path"', ': "b.txt"}')
        .completed(usage(500, 300, cached=400, reasoning=256))
    )
    second = Stream().created().text("Both read.").completed(usage(900, 4, cached=800))
    server.add(Reply.sse(first.events), Reply.sse(second.events))
    model = make_model(server, client, sleeps)

    async with model.stream(REQUEST) as stream:
        reply = await collect(stream)
    kept = thought.model_dump(exclude_none=True)
    assert reply == AssistantMessage(
        tool_calls=(
            ToolCall(id="call_a", name="read_file", arguments='{"path": "a.txt"}'),
            ToolCall(id="call_b", name="read_file", arguments='{"path": "b.txt"}'),
        ),
        thinking=(
            Thinking(
                text="Two files to read.",
                signature=orjson.dumps(kept).decode(),
                source="openai-responses:gpt-test",
            ),
        ),
        # Reasoning tokens are output tokens (and billed as such); cached input apart.
        usage=Usage(input_tokens=100, output_tokens=300, cache_read_tokens=400),
        stop_reason="tool_use",
    )

    # The reply is journaled and read back before the next turn: the reasoning survives.
    reply = msgspec.json.decode(msgspec.json.encode(reply), type=Message)
    context = [
        *REQUEST.messages,
        reply,
        ToolResult(call_id="call_a", name="read_file", content="A"),
        ToolResult(call_id="call_b", name="read_file", status="error", content="no such file"),
    ]
    events = await events_of(model, ModelRequest(messages=context, tools=TOOLS))
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta(text="Both read.")]

    sent = server.requests[1].json()["input"]
    assert sent[2:] == [
        kept,  # the reasoning item, unchanged: id, summary, encrypted content
        {
            "type": "function_call",
            "call_id": "call_a",
            "name": "read_file",
            "arguments": '{"path": "a.txt"}',
        },
        {
            "type": "function_call",
            "call_id": "call_b",
            "name": "read_file",
            "arguments": '{"path": "b.txt"}',
        },
        {"type": "function_call_output", "call_id": "call_a", "output": "A"},
        {"type": "function_call_output", "call_id": "call_b", "output": "Error: no such file"},
    ]
    assert kept["encrypted_content"].startswith("gAAAAB-encrypted-1-")


async def test_reasoning_summary_streams_as_thinking(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    stream = Stream().created().reasoning(reasoning_item(7, "Plan.")).text("Done.").completed()
    server.add(Reply.sse(stream.events))
    events = await events_of(make_model(server, client, sleeps), REQUEST)
    assert events[0] == ThinkingDelta(text="Plan.")
    assert isinstance(events[1], ThinkingDone)
    assert events[1].block.text == "Plan."
    assert events[2:] == [TextDelta(text="Done."), StreamEnded(stop_reason="end_turn")]


def test_reasoning_of_another_provider_is_not_sent() -> None:
    anthropic = Thinking(text="hmm", signature="EqQBCkgIARABGAIiQL")  # base64, not an item
    unsigned = Thinking(text="from a chat completions server")
    reply = AssistantMessage(text="ok", thinking=(anthropic, unsigned))
    body = to_wire(ModelRequest(messages=(UserMessage(content="hi"), reply)), model="m")
    assert body["input"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok"},
    ]


def test_a_reasoning_item_goes_back_only_to_the_model_that_made_it() -> None:
    item = orjson.dumps(reasoning_item(4, "why").model_dump(exclude_none=True)).decode()
    own = Thinking(text="why", signature=item, source="openai-responses:gpt-test")
    older = Thinking(text="why", signature=item)  # recorded before thinking named its model
    for block, takers in ((own, {"gpt-test"}), (older, {"gpt-test", "gpt-other"})):
        reply = AssistantMessage(text="ok", thinking=(block,))
        request = ModelRequest(messages=(UserMessage(content="hi"), reply))
        for model in ("gpt-test", "gpt-other"):
            kinds = [i.get("type") for i in to_wire(request, model=model)["input"]]
            assert ("reasoning" in kinds) == (model in takers), (block, model)


def test_each_message_is_translated_once_and_the_note_is_this_requests_only() -> None:
    base: list[Message] = [UserMessage(content="hi")]
    cache: WireCache[Items] = WireCache(Items)
    first = to_wire(
        ModelRequest(messages=MessageView(base, 1), note="2 calls running"),
        model="m",
        cache=cache,
    )
    assert first["input"][-1] == {"role": "user", "content": "2 calls running"}
    base.append(AssistantMessage(text="hello"))
    second = to_wire(
        ModelRequest(messages=MessageView(base, 2)),
        model="m",
        cache=cache,
        prompt_cache_key=False,
    )
    assert second["input"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]


async def test_a_refusal_is_the_text_with_stop_reason_refusal(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    stream = Stream().created().text("I can't ", "help with that.", refusal=True).completed()
    server.add(Reply.sse(stream.events))
    model = make_model(server, client, sleeps)
    async with model.stream(REQUEST) as events:
        reply = await collect(events)
    assert reply.text == "I can't help with that."
    assert reply.stop_reason == "refusal"


async def test_an_incomplete_response_stops_for_max_tokens(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    stream = Stream().created().text("Once upon").incomplete("max_output_tokens", usage(10, 16))
    server.add(Reply.sse(stream.events))
    events = await events_of(make_model(server, client, sleeps), REQUEST)
    assert events[-2:] == [
        UsageReported(usage=Usage(input_tokens=10, output_tokens=16)),
        StreamEnded(stop_reason="max_tokens"),
    ]


@pytest.mark.parametrize("how", ["400", "error event"])
async def test_context_too_long_is_ours(
    how: str, server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    message = (
        "Your input exceeds the context window of this model. Please adjust your input and "
        "try again."
    )
    match how:
        case "400":
            server.add(context_too_long("openai", limit=400_000, requested=512_345))
        case _:
            stream = Stream().created().error("context_length_exceeded", message)
            server.add(Reply.sse(stream.events))
    with pytest.raises(ContextTooLong) as caught:
        await events_of(make_model(server, client, sleeps), REQUEST)
    if how == "400":
        assert (caught.value.limit, caught.value.requested) == (400_000, 512_345)
    assert len(server.requests) == 1  # not retried: the caller compacts


async def test_429_and_500_are_retried_by_the_shared_layer(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    limited = openai_error("requests", "Rate limit reached", code="rate_limit_exceeded")
    server.add(
        Reply.json(429, limited, headers={"retry-after-ms": "1500"}),
        Reply.json(500, {"error": {"message": "boom", "type": "server_error"}}),
        Reply.sse(Stream().created().text("ok").completed().events),
    )
    events = await events_of(make_model(server, client, sleeps), REQUEST)
    # Each wait is said before it is waited (the view shows it), then the answer.
    said = [(e.seconds, e.why) for e in events if isinstance(e, Waiting)]
    assert said == [
        (1.5, "openai-responses is rate-limited: trying again"),
        (2.0, "openai-responses failed: trying again"),
    ]
    assert events[2:] == [TextDelta(text="ok"), StreamEnded(stop_reason="end_turn")]
    assert sleeps.calls == [1.5, 2.0]  # the server's Retry-After, then backoff
    assert len(server.requests) == 3


@pytest.mark.parametrize("code", ["rate_limit_exceeded", "server_error"])
async def test_a_failed_response_is_retried_when_its_error_is_passing(
    code: str, server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(
        Reply.sse(Stream().created().failed(code, "try again").events),
        Reply.sse(Stream().created().text("ok").completed().events),
    )
    events = await events_of(make_model(server, client, sleeps), REQUEST)
    assert next(e for e in events if not isinstance(e, Waiting)) == TextDelta(text="ok")
    assert len(server.requests) == 2


async def test_a_stream_cut_in_half_is_retried_when_nothing_was_yielded(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    whole = Stream().created().call("call_a", "read_file", '{"path": "a.txt"}').completed()
    cut = whole.events[: len(whole.events) // 2]
    server.add(Reply.sse(cut), Reply.sse(whole.events))
    events = await events_of(make_model(server, client, sleeps), REQUEST)
    assert [e for e in events if not isinstance(e, Waiting)] == [
        ToolCallReady(call=ToolCall(id="call_a", name="read_file", arguments='{"path": "a.txt"}')),
        StreamEnded(stop_reason="tool_use"),
    ]
    assert len(server.requests) == 2


async def test_a_stream_cut_after_text_is_an_error_not_a_silent_retry(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    whole = Stream().created().text("partial answer").completed()
    server.add(Reply.sse(whole.events[:-1]))
    model = make_model(server, client, sleeps)
    seen: list[ModelEvent] = []

    async def read() -> None:
        async with model.stream(REQUEST) as stream:
            async for event in stream:
                seen.append(event)

    with pytest.raises(ProviderTransient, match="ended before the model finished"):
        await read()
    assert seen == [TextDelta(text="partial answer")]
    assert len(server.requests) == 1


async def test_rate_limit_is_raised_after_the_retries(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    limited = {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}
    server.add(*[Reply.json(429, limited) for _ in range(4)])
    with pytest.raises(ProviderRateLimited):
        await events_of(make_model(server, client, sleeps), REQUEST)
    assert len(server.requests) == 4


def test_a_responses_reasoning_item_is_not_replayed_to_anthropic() -> None:
    kept = reasoning_item(3, "why").model_dump(exclude_none=True)
    block = Thinking(text="why", signature=orjson.dumps(kept).decode())
    reply = AssistantMessage(text="ok", thinking=(block,))
    body = anthropic_to_wire(ModelRequest(messages=(UserMessage(content="hi"), reply)), model="c")
    assert body["messages"][1] == {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}


def test_orchestrator_models_lists_it(tmp_path: Path) -> None:
    out = io.StringIO()
    env = {"ORCHESTRATOR_CONFIG": str(tmp_path / "none.toml"), "OPENAI_API_KEY": "sk-secret"}
    assert run_models(argparse.Namespace(json=True), env, out=out) == 0
    (row,) = [
        p for p in orjson.loads(out.getvalue())["providers"] if p["name"] == "openai-responses"
    ]
    assert row["base_url"] == "https://api.openai.com/v1"
    assert row["key"] == "OPENAI_API_KEY set"


async def test_a_model_that_does_not_reason_is_asked_again_without_encrypted_reasoning(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    said = "Encrypted content is not supported with this model."
    refused = openai_error("invalid_request_error", said, param="include", code=None)
    server.add(
        Reply.json(400, refused),
        Reply.sse(Stream().created().text("one").completed().events),
        Reply.sse(Stream().created().text("two").completed().events),
    )
    model = make_model(server, client, sleeps)
    assert (await events_of(model, REQUEST))[0] == TextDelta(text="one")
    assert (await events_of(model, REQUEST))[0] == TextDelta(text="two")
    first, again, later = (r.json() for r in server.requests)
    assert first["include"] == ["reasoning.encrypted_content"]
    assert "include" not in again
    assert "include" not in later  # learned once for this model
    assert again == {k: v for k, v in first.items() if k != "include"}
    assert sleeps.calls == []  # asked again at once: not a retry


async def test_any_other_bad_request_is_raised(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(
        Reply.json(
            400,
            {"error": {"message": "Unknown parameter: 'foo'.", "type": "invalid_request_error"}},
        )
    )
    with pytest.raises(ProviderBadRequest, match="Unknown parameter"):
        await events_of(make_model(server, client, sleeps), REQUEST)
    assert len(server.requests) == 1


async def test_leaving_the_stream_early_closes_the_connection(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(Reply.sse(Stream().created().text("first").events, tail=[Stall()]))
    model = make_model(server, client, sleeps)
    async with model.stream(REQUEST) as stream:
        async for event in stream:
            assert event == TextDelta(text="first")
            break
    await server.disconnected.wait()
    assert server.disconnects == 1


def test_request_translation_named_tool_choice_limits_and_no_stop() -> None:
    request = dataclasses.replace(
        REQUEST, tool_choice="read_file", max_tokens=50, temperature=0.2, stop=("X",)
    )
    body = to_wire(request, model="m", prompt_cache_key=False)
    assert body["tool_choice"] == {"type": "function", "name": "read_file"}
    assert (body["max_output_tokens"], body["temperature"]) == (50, 0.2)
    assert "stop" not in body
    assert "prompt_cache_key" not in body


@pytest.mark.parametrize("refusal", [False, True])
def test_a_message_sent_whole_without_deltas_is_the_text(refusal: bool) -> None:
    # Events of a stream that sends each item only when done: its text is not lost.
    whole = Stream().created().text("No.", refusal=refusal).completed()
    decoder = ResponsesStreamDecoder("openai-responses")
    events: list[ModelEvent] = []
    for raw in whole.events:
        if b"delta" not in raw.split(b"\n", 1)[0]:
            events += decoder.feed(*SSEDecoder().feed(raw))
    events += decoder.finish()
    assert events == [
        TextDelta(text="No."),
        StreamEnded(stop_reason="refusal" if refusal else "end_turn"),
    ]


async def test_a_call_cut_by_the_output_limit_comes_with_the_arguments_that_came(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    """A response cut mid-call ends `incomplete` with the call's item never done: the
    call is still emitted, its arguments unfinished, so the turn loop knows it was cut."""
    stream = Stream().created().cut_call("call_cut", "read_file", '{"path": "a.t')
    stream.incomplete("max_output_tokens", usage(10, 64))
    server.add(Reply.sse(stream.events))
    events = await events_of(make_model(server, client, sleeps), REQUEST)
    assert events == [
        ToolCallReady(call=ToolCall(id="call_cut", name="read_file", arguments='{"path": "a.t')),
        UsageReported(usage=Usage(input_tokens=10, output_tokens=64)),
        StreamEnded(stop_reason="max_tokens"),
    ]
