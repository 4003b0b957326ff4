"""Timeouts and retry sleeps at their real defaults, in virtual time: httpx's
MockTransport (no sockets) lets autojump_clock skip minutes in milliseconds."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
import trio
from sdk_types import OPENAI_DONE, openai_chunk

from orchestrator.errors import ProviderTransient
from orchestrator.messages import UserMessage
from orchestrator.models.base import ModelRequest, collect
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
