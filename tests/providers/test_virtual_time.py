"""Timeouts and retry sleeps at their real defaults, in virtual time: httpx's
MockTransport (no sockets) lets autojump_clock skip minutes in milliseconds."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
import trio
from sdk_types import OPENAI_DONE, openai_chunk

from orchestrator import ModelRequest, UserMessage
from orchestrator.errors import ProviderTransient
from orchestrator.models import collect
from orchestrator.models.http import HttpOptions, RetryPolicy, Timeouts
from orchestrator.models.openai import OpenAIChatModel, OpenAIEndpoint

REQUEST = ModelRequest(messages=(UserMessage(content="hi"),))
Handler = Callable[[httpx.Request], Awaitable[httpx.Response]]


class Paced(httpx.AsyncByteStream):
    """Yields each piece after its delay; `None` as a piece means: stall forever."""

    def __init__(self, pieces: list[tuple[float, bytes | None]]) -> None:
        self.pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for delay, piece in self.pieces:
            await trio.sleep(delay)
            if piece is None:
                await trio.sleep_forever()
            yield piece


def sse(pieces: list[tuple[float, bytes | None]]) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Paced(pieces))


def model(handler: Handler, retry: RetryPolicy | None = None) -> OpenAIChatModel:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    ep = OpenAIEndpoint(provider="openai", model="m", base_url="http://test/v1")
    return OpenAIChatModel(ep, HttpOptions(client=client, retry=retry or RetryPolicy()))


async def complete(m: OpenAIChatModel) -> str:
    async with m.stream(REQUEST) as events:
        return (await collect(events)).text


async def test_slow_but_steady_generation_is_not_cut_off(autojump_clock: trio.abc.Clock) -> None:
    # 20 minutes in all, a chunk every 100 s: below the idle limit, so it completes.
    pieces: list[tuple[float, bytes | None]] = [
        (100.0, openai_chunk({"content": "x"})) for _ in range(12)
    ]
    pieces += [(100.0, openai_chunk({}, finish="stop")), (0.0, OPENAI_DONE)]

    async def handler(request: httpx.Request) -> httpx.Response:
        return sse(pieces)

    start = trio.current_time()
    assert await complete(model(handler)) == "x" * 12
    assert trio.current_time() - start == pytest.approx(1300)


async def test_idle_timeout_default(autojump_clock: trio.abc.Clock) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return sse([(1.0, openai_chunk({"content": "x"})), (0.0, None)])

    start = trio.current_time()
    with pytest.raises(ProviderTransient, match="stalled: no data for 120s"):
        await complete(model(handler))
    assert trio.current_time() - start == pytest.approx(121)


async def test_first_byte_timeout_default(autojump_clock: trio.abc.Clock) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()
        raise AssertionError

    start = trio.current_time()
    with pytest.raises(ProviderTransient, match="no response within 300s"):
        await complete(model(handler, RetryPolicy(max_retries=0)))
    assert trio.current_time() - start == pytest.approx(Timeouts().first_byte)


async def test_retry_sleeps_with_trio_by_default(autojump_clock: trio.abc.Clock) -> None:
    replies = [
        httpx.Response(503, json={"error": {"message": "busy"}}),
        httpx.Response(503, json={"error": {"message": "busy"}}, headers={"retry-after": "30"}),
        sse([(0.0, openai_chunk({"content": "ok"}, finish="stop")), (0.0, OPENAI_DONE)]),
    ]

    async def handler(request: httpx.Request) -> httpx.Response:
        return replies.pop(0)

    start = trio.current_time()
    assert await complete(model(handler)) == "ok"
    # Backoff with jitter (0.5 to 1 s) for the first, then the server's 30 s.
    assert 30.5 <= trio.current_time() - start <= 31.0


async def test_a_rate_limit_told_to_one_agent_holds_every_agent_on_that_key(
    autojump_clock: trio.abc.Clock,
) -> None:
    from orchestrator.models.limits import Backoff

    arrivals: list[tuple[float, str]] = []
    limited = False

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal limited
        arrivals.append((trio.current_time(), request.headers["authorization"]))
        if not limited:
            limited = True
            return httpx.Response(429, headers={"retry-after": "30"}, json={"error": {}})
        return sse([(0.0, openai_chunk({"content": "ok"}, finish="stop")), (0.0, OPENAI_DONE)])

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    backoff = Backoff()

    def agent_model(key: str) -> OpenAIChatModel:
        ep = OpenAIEndpoint(provider="openai", model="m", base_url="http://test/v1", api_key=key)
        return OpenAIChatModel(ep, HttpOptions(client=client, backoff=backoff))

    first, second, other_key = agent_model("k1"), agent_model("k1"), agent_model("k2")
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(complete, first)
        await trio.sleep(1)  # after the 429: the second agent must not learn it by a 429
        nursery.start_soon(complete, second)
        nursery.start_soon(complete, other_key)  # another key is not held
    times = [(round(t - start), auth) for t, auth in arrivals]
    assert times[0] == (0, "Bearer k1")  # told to wait 30 s
    assert (1, "Bearer k2") in times
    assert sorted(t for t, auth in times[1:] if auth == "Bearer k1") == [30, 30]
    assert len(times) == 4  # one 429 in all
