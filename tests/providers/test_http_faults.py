"""Faults, against a real server on 127.0.0.1: what is retried (and how long we wait),
what is not, and which error class the caller gets."""

from __future__ import annotations

import socket
from collections.abc import Callable

import httpx
import pytest
import trio
from adapter_setup import http_options
from provider_server import Drop, LoopbackServer, Reply, Sleeps, Stall
from sdk_types import (
    anthropic_error,
    anthropic_event,
    anthropic_text,
    message_start,
    openai_text,
)

from orchestrator import AssistantMessage, Model, ModelRequest, UserMessage
from orchestrator.errors import (
    ContextTooLong,
    ModelError,
    ProviderAuthError,
    ProviderBadRequest,
    ProviderFatal,
    ProviderRateLimited,
    ProviderTransient,
)
from orchestrator.models import ModelEvent, TextDelta, collect
from orchestrator.models.anthropic import AnthropicEndpoint, AnthropicModel
from orchestrator.models.http import RetryPolicy, Timeouts
from orchestrator.models.openai import OpenAIChatModel, OpenAIEndpoint

REQUEST = ModelRequest(messages=(UserMessage(content="hi"),))
KEY = "sk-secret-never-shown"

OPENAI_OK = openai_text("fine")
ANTHROPIC_OK = anthropic_text("fine")

MakeModel = Callable[..., Model]


RETRY = RetryPolicy(max_retries=3, base_delay=1.0, max_retry_after=60)


@pytest.fixture
def openai(server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps) -> MakeModel:
    def make(timeouts: Timeouts | None = None) -> Model:
        ep = OpenAIEndpoint(provider="openai", model="m", base_url=server.url, api_key=KEY)
        return OpenAIChatModel(ep, http_options(client, sleeps, RETRY, timeouts))

    return make


@pytest.fixture
def anthropic(server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps) -> MakeModel:
    def make(timeouts: Timeouts | None = None) -> Model:
        ep = AnthropicEndpoint(model="claude", api_key=KEY, base_url=server.url)
        return AnthropicModel(ep, http_options(client, sleeps, RETRY, timeouts))

    return make


async def complete(model: Model) -> AssistantMessage:
    async with model.stream(REQUEST) as events:
        return await collect(events)


async def partial_then_error(model: Model) -> tuple[list[ModelEvent], ModelError]:
    seen: list[ModelEvent] = []
    try:
        async with model.stream(REQUEST) as events:
            async for event in events:
                seen.append(event)
    except ModelError as exc:
        return seen, exc
    raise AssertionError(f"the stream ended without an error after {seen}")


# --- retried --------------------------------------------------------------------------


async def test_429_honours_retry_after(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    server.add(
        Reply.json(429, {"error": {"message": "slow down", "type": "rate_limit_exceeded"}},
                   {"retry-after": "7"}),
        Reply.json(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "1500"}),
        Reply.sse(OPENAI_OK),
    )  # fmt: skip
    assert (await complete(openai())).text == "fine"
    assert sleeps.calls == [7.0, 1.5]
    assert len(server.requests) == 3


async def test_5xx_backs_off_exponentially_then_succeeds(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    server.add(
        Reply.json(500, {"error": {"message": "boom", "type": "server_error"}}),
        Reply.json(502, {}),
        Reply.json(503, {}),
        Reply.sse(OPENAI_OK),
    )
    assert (await complete(openai())).text == "fine"
    assert sleeps.calls == [1.0, 2.0, 4.0]


async def test_gives_up_after_max_retries(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    server.add(*[Reply.json(500, {"error": {"message": f"boom {n}"}}) for n in range(4)])
    with pytest.raises(ProviderTransient, match="boom 3"):
        await complete(openai())
    assert len(server.requests) == 4
    assert len(sleeps.calls) == 3


async def test_retry_after_beyond_the_limit_is_raised_not_waited(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    server.add(Reply.json(429, {"error": {"message": "later"}}, {"retry-after": "3600"}))
    with pytest.raises(ProviderRateLimited) as info:
        await complete(openai())
    assert info.value.retry_after == 3600
    assert sleeps.calls == []


async def test_529_overloaded_is_retried(
    server: LoopbackServer, anthropic: MakeModel, sleeps: Sleeps
) -> None:
    server.add(
        Reply.json(529, anthropic_error("overloaded_error", "Overloaded")),
        Reply.sse(ANTHROPIC_OK),
    )
    assert (await complete(anthropic())).text == "fine"
    assert sleeps.calls == [1.0]


async def test_connection_dropped_before_the_first_byte_is_retried(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    server.add(Reply.drop_before_headers(), Reply.sse(OPENAI_OK))
    assert (await complete(openai())).text == "fine"
    assert len(server.requests) == 2


async def test_drop_mid_stream_before_any_output_is_retried(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    # Only the role chunk (no output) arrived: nothing to discard, so a retry is clean.
    server.add(Reply.sse(OPENAI_OK[:1], tail=[Drop()]), Reply.sse(OPENAI_OK))
    assert (await complete(openai())).text == "fine"
    assert len(server.requests) == 2


async def test_overloaded_error_event_before_output_is_retried(
    server: LoopbackServer, anthropic: MakeModel, sleeps: Sleeps
) -> None:
    server.add(
        Reply.sse([message_start(), anthropic_event(anthropic_error("overloaded_error", "Over"))]),
        Reply.sse(ANTHROPIC_OK),
    )
    assert (await complete(anthropic())).text == "fine"


async def test_no_first_byte_in_time_is_retried(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    server.add(Reply.stall_before_headers(), Reply.sse(OPENAI_OK))
    model = openai(Timeouts(first_byte=0.2, idle=10))
    assert (await complete(model)).text == "fine"
    assert len(server.requests) == 2


async def test_connection_refused_is_transient(client: httpx.AsyncClient, sleeps: Sleeps) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ep = OpenAIEndpoint(provider="ollama", model="m", base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ProviderTransient, match="connection failed"):
        await complete(OpenAIChatModel(ep, http_options(client, sleeps, RETRY, None)))
    assert len(sleeps.calls) == 3


# --- not retried once output has begun ------------------------------------------------


async def test_drop_after_output_raises_and_keeps_what_arrived(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    server.add(Reply.sse(OPENAI_OK[:2], tail=[Drop()]), Reply.sse(OPENAI_OK))
    seen, error = await partial_then_error(openai())
    assert seen == [TextDelta(text="fine")]
    assert isinstance(error, ProviderTransient)
    assert len(server.requests) == 1


async def test_error_event_mid_stream_raises(
    server: LoopbackServer, anthropic: MakeModel, sleeps: Sleeps
) -> None:
    server.add(
        Reply.sse([*ANTHROPIC_OK[:3], anthropic_event(anthropic_error("overloaded_error", "Over"))])
    )
    seen, error = await partial_then_error(anthropic())
    assert seen == [TextDelta(text="fine")]
    assert isinstance(error, ProviderRateLimited)
    assert len(server.requests) == 1


async def test_openai_error_chunk_mid_stream_raises(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    error_chunk = (
        b'data: {"error": {"message": "The server had an error", "type": "server_error"}}\n\n'
    )
    server.add(Reply.sse([*OPENAI_OK[:2], error_chunk]))
    seen, error = await partial_then_error(openai())
    assert seen == [TextDelta(text="fine")]
    assert isinstance(error, ProviderTransient)
    assert "The server had an error" in str(error)


async def test_stalled_stream_hits_the_idle_timeout(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    # A real socket needs a real (short) timeout: autojump_clock would race the kernel.
    server.add(Reply.sse(OPENAI_OK[:2], tail=[Stall()]))
    seen, error = await partial_then_error(openai(Timeouts(first_byte=5, idle=0.2)))
    assert seen == [TextDelta(text="fine")]
    assert isinstance(error, ProviderTransient)
    assert "stalled" in str(error)


async def test_stream_ending_without_a_finish_is_an_error(
    server: LoopbackServer, anthropic: MakeModel, sleeps: Sleeps
) -> None:
    server.add(Reply.sse(ANTHROPIC_OK[:3]))  # ends cleanly, but mid-message
    _, error = await partial_then_error(anthropic())
    assert isinstance(error, ProviderTransient)
    assert "ended before" in str(error)


async def test_cancelling_closes_the_http_stream(server: LoopbackServer, openai: MakeModel) -> None:
    server.add(Reply.sse(OPENAI_OK[:2], tail=[Stall()]))
    with trio.move_on_after(30) as scope:  # a bound in case it hangs; never reached
        async with openai().stream(REQUEST) as events:
            async for _ in events:
                scope.cancel()
    with trio.fail_after(5):
        await server.disconnected.wait()


# --- errors the caller acts on --------------------------------------------------------

CONTEXT_TOO_LONG = [
    pytest.param(
        400,
        {"error": {"message": "This model's maximum context length is 128000 tokens. However, "
                   "your messages resulted in 130000 tokens.", "type": "invalid_request_error",
                   "param": "messages", "code": "context_length_exceeded"}},
        id="openai",
    ),
    pytest.param(
        400,
        {"object": "error", "message": "This model's maximum context length is 4096 tokens. "
         "However, you requested 5000 tokens.", "type": "BadRequestError", "code": 400},
        id="vllm",
    ),
    pytest.param(
        400,
        {"error": {"code": 400, "message": "the request exceeds the available context size, "
                   "try increasing it", "type": "exceed_context_size_error",
                   "n_prompt_tokens": 5000, "n_ctx": 4096}},
        id="llama.cpp",
    ),
    pytest.param(
        400,
        {"error": {"message": "This endpoint's maximum context length is 8192 tokens.",
                   "code": 400}},
        id="openrouter",
    ),
    pytest.param(
        400,
        anthropic_error("invalid_request_error", "prompt is too long: 210000 tokens > 200000"),
        id="anthropic",
    ),
    pytest.param(
        413, anthropic_error("request_too_large", "Request exceeds the maximum size"),
        id="anthropic-413",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("status", "body"), CONTEXT_TOO_LONG)
async def test_context_too_long_is_recognised(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps, status: int, body: object
) -> None:
    server.add(Reply.json(status, body))
    with pytest.raises(ContextTooLong):
        await complete(openai())
    assert sleeps.calls == []


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_401_is_an_auth_error_that_never_shows_the_key(
    server: LoopbackServer,
    openai: MakeModel,
    anthropic: MakeModel,
    sleeps: Sleeps,
    provider: str,
) -> None:
    body = (
        anthropic_error("authentication_error", "invalid x-api-key")
        if provider == "anthropic"
        else {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}
    )
    server.add(Reply.json(401, body))
    make = anthropic if provider == "anthropic" else openai
    with pytest.raises(ProviderAuthError) as info:
        await complete(make())
    assert body_message(body) in str(info.value)
    assert KEY not in str(info.value)
    assert KEY not in repr(make())
    assert sleeps.calls == []


def body_message(body: dict[str, dict[str, str]]) -> str:
    return body["error"]["message"]


async def test_bad_request_carries_the_provider_message(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    server.add(Reply.json(400, {"error": {"message": "Invalid 'tools[0].function.name'"}}))
    with pytest.raises(ProviderBadRequest, match=r"HTTP 400: Invalid 'tools\[0\]"):
        await complete(openai())


async def test_ollama_plain_string_error(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    server.add(Reply.json(404, {"error": "model 'llama9' not found, try pulling it first"}))
    with pytest.raises(ProviderBadRequest, match="try pulling it first"):
        await complete(openai())


async def test_exhausted_quota_is_fatal_not_retried(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    server.add(
        Reply.json(429, {"error": {"message": "You exceeded your current quota",
                                   "type": "insufficient_quota", "code": "insufficient_quota"}})
    )  # fmt: skip
    with pytest.raises(ProviderFatal, match="quota"):
        await complete(openai())
    assert sleeps.calls == []


async def test_json_instead_of_a_stream_is_fatal(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    server.add(Reply.json(200, {"id": "x", "choices": []}))
    with pytest.raises(ProviderFatal, match="expected an event stream"):
        await complete(openai())


async def test_malformed_event_json_is_fatal(
    server: LoopbackServer, openai: MakeModel, sleeps: Sleeps
) -> None:
    server.add(Reply.sse([b'data: {"choices": [\n\n']))
    with pytest.raises(ProviderFatal, match="malformed event"):
        await complete(openai())
