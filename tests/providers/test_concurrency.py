"""One endpoint's concurrency (issue 41, item 3): a 429 or 529 halves the calls that run
at once on it, calm calls raise it back one at a time, and the retry-after told to one
agent holds them all. In virtual time, over httpx's MockTransport (as
test_virtual_time.py), so a test of seconds of waiting takes milliseconds."""

from __future__ import annotations

import httpx
import orjson
import pytest
import trio
import trio.testing
from sdk_types import OPENAI_DONE, openai_chunk
from test_virtual_time import complete, sse

from orchestrator import ModelRequest, UserMessage
from orchestrator.models.http import HttpOptions
from orchestrator.models.limits import GROW_AFTER, Backoff
from orchestrator.models.openai import OpenAIChatModel, OpenAIEndpoint


async def test_a_limit_halves_the_places_and_calm_calls_give_them_back_one_by_one(
    autojump_clock: trio.abc.Clock,
) -> None:
    backoff = Backoff()
    for _ in range(4):
        await backoff.enter("k", ceiling=4)
    late = trio.Event()

    async def fifth() -> None:
        await backoff.enter("k", ceiling=4)
        late.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(fifth)
        await trio.sleep(1)
        assert not late.is_set()  # four places, four taken
        backoff.leave("k", limited=True)  # a 429: two places now
        assert backoff.limit("k") == 2
        await trio.sleep(1)
        assert not late.is_set()  # three still run
        backoff.leave("k")
        backoff.leave("k")
        await trio.sleep(1)
        assert late.is_set()  # one runs: the fifth takes the second place
    for _ in range(2):
        backoff.leave("k", ok=True)
    assert backoff.limit("k") == 2  # calm, but not yet for long enough
    for _ in range(GROW_AFTER - 2):
        await backoff.enter("k", ceiling=4)
        backoff.leave("k", ok=True)
    assert backoff.limit("k") == 3
    for _ in range(5 * GROW_AFTER):
        await backoff.enter("k", ceiling=4)
        backoff.leave("k", ok=True)
    assert backoff.limit("k") == 4  # never past the ceiling
    for _ in range(3):
        await backoff.enter("k", ceiling=4)
        backoff.leave("k", limited=True)  # 4, 2, 1, and no lower
    assert backoff.limit("k") == 1


async def test_a_cancelled_wait_gives_its_turn_to_the_next(
    autojump_clock: trio.abc.Clock,
) -> None:
    backoff = Backoff()
    await backoff.enter("k", ceiling=1)
    got: list[str] = []

    async def wait(name: str) -> None:
        await backoff.enter("k", ceiling=1)
        got.append(name)

    async with trio.open_nursery() as nursery:
        first = trio.CancelScope()

        async def cancelled_first() -> None:
            with first:
                await wait("first")

        nursery.start_soon(cancelled_first)
        await trio.sleep(1)
        nursery.start_soon(wait, "second")
        await trio.sleep(1)
        first.cancel()  # (while it waits for its turn)
        await trio.sleep(1)
        backoff.leave("k", ok=True)
    assert got == ["second"]


@pytest.mark.parametrize("status", [429, 529])
async def test_eight_agents_on_one_endpoint_wait_out_a_limit_and_run_half_as_many(
    autojump_clock: trio.abc.Clock, status: int
) -> None:
    """Eight agents, five calls each, each call streaming for a second. The first is
    answered `status` with retry-after 2: no agent sends anything for 2 s, then at most
    four run at once, and calm calls raise it back."""
    arrivals: list[float] = []
    running = 0
    most: list[tuple[float, int]] = []  # (time, calls streaming at once) at each arrival

    class Counted(httpx.AsyncByteStream):
        def __init__(self, inner: httpx.Response) -> None:
            self.inner = inner

        async def __aiter__(self):  # type: ignore[no-untyped-def]
            nonlocal running
            try:
                async for piece in self.inner.aiter_raw():
                    yield piece
            finally:
                running -= 1

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal running
        arrivals.append(trio.current_time())
        if len(arrivals) == 1:
            return httpx.Response(status, headers={"retry-after": "2"}, json={"error": {}})
        running += 1
        most.append((trio.current_time(), running))
        done = openai_chunk({"content": "ok"}, finish="stop")
        inner = sse([(1.0, done), (0.0, OPENAI_DONE)])
        return httpx.Response(200, headers=inner.headers, stream=Counted(inner))

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    backoff = Backoff()
    ep = OpenAIEndpoint(provider="openai", model="m", base_url="http://test/v1", api_key="k")
    http = HttpOptions(client=client, backoff=backoff, concurrency=8)
    agents = [OpenAIChatModel(ep, http) for _ in range(8)]

    async def five_calls(model: OpenAIChatModel) -> None:
        for _ in range(5):
            assert await complete(model) == "ok"

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        for model in agents:
            nursery.start_soon(five_calls, model)
    assert len(arrivals) == 8 * 5 + 1  # one refused, all the rest answered
    assert not [t for t in arrivals[1:] if t - start < 2]  # the hold held every agent
    first_window = [n for t, n in most if t - start < 3]
    assert first_window
    assert max(first_window) <= 4  # halved from eight
    key = next(iter(backoff._lanes))
    assert backoff.limit(key) == 4 + (8 * 5) // GROW_AFTER  # grown back, one by one


async def test_a_call_given_its_place_during_a_hold_waits_it_out(
    autojump_clock: trio.abc.Clock,
) -> None:
    """Two places, both taken: a streams for 5 s, b is told 429 retry-after 10 after
    1 s; c waits for a place meanwhile. b's 429 halves the places to one, which c gets
    when a ends, at 5 s: it must still wait out b's hold, to 11 s."""
    arrivals: list[tuple[float, str]] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        who = orjson.loads(request.content)["messages"][-1]["content"]
        arrivals.append((trio.current_time(), who))
        if who == "b" and len(arrivals) == 2:
            await trio.sleep(1)
            return httpx.Response(429, headers={"retry-after": "10"}, json={"error": {}})
        done = openai_chunk({"content": "ok"}, finish="stop")
        return sse([(5.0 if who == "a" else 0.0, done), (0.0, OPENAI_DONE)])

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    ep = OpenAIEndpoint(provider="openai", model="m", base_url="http://test/v1", api_key="k")
    model = OpenAIChatModel(ep, HttpOptions(client=client, backoff=Backoff(), concurrency=2))

    async def call(who: str) -> None:
        request = ModelRequest(messages=(UserMessage(content=who),))
        async with model.stream(request) as events:
            async for _ in events:
                pass

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        for who in "abc":  # (in this order)
            nursery.start_soon(call, who)
            await trio.testing.wait_all_tasks_blocked()
    assert [(round(t - start), who) for t, who in arrivals] == [
        (0, "a"),
        (0, "b"),
        (11, "c"),  # (not at 5 s, when a left its place)
        (11, "b"),  # (the place is c's, then b's)
    ]
