"""Requests and tokens a minute per model (issue 41, item 3): `[limits."SPEC"] rpm / tpm`
from the config to the wire, kept to by waiting (said as `Waiting`) rather than by a 429.
Asserted on the server's side, in virtual time over httpx's MockTransport (as
test_concurrency.py), so minutes of waiting take milliseconds."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from itertools import pairwise

import httpx
import pytest
import trio
from sdk_types import OPENAI_DONE, openai_chunk, openai_usage
from test_virtual_time import sse

from orchestrator import ModelRequest, UserMessage
from orchestrator.config import parse_config
from orchestrator.errors import ConfigError
from orchestrator.loop import compaction
from orchestrator.messages import Usage
from orchestrator.models.base import Model, TextDelta, Waiting
from orchestrator.models.limits import CHARS_PER_TOKEN, MINUTE, Backoff, Rate
from orchestrator.models.resolve import resolve_model

SPEC = "openai-compatible:m@http://127.0.0.1:9/v1"


def _request(text: str = "hi") -> ModelRequest:
    return ModelRequest(messages=(UserMessage(content=text),))


class Server:
    """Answers every request "ok" after `seconds`, reporting `usage` (prompt, completion)
    if given; records when each request arrived and its body."""

    def __init__(self, *, usage: tuple[int, int] | None = None, seconds: float = 0.0) -> None:
        self.arrivals: list[tuple[float, bytes]] = []
        self.usage = usage
        self.seconds = seconds

    async def handle(self, request: httpx.Request) -> httpx.Response:
        self.arrivals.append((trio.current_time(), request.content))
        pieces: list[tuple[float, bytes | None]] = [
            (self.seconds, openai_chunk({"content": "ok"}, finish="stop"))
        ]
        if self.usage is not None:
            pieces.append((0.0, openai_usage(*self.usage)))
        return sse([*pieces, (0.0, OPENAI_DONE)])

    def most_in_a_minute(self, weight: Callable[[bytes], int] = lambda body: 1) -> int:
        """The most requests (or what `weight` counts of them) in any minute."""
        return max(
            sum(weight(body) for t, body in self.arrivals if start <= t < start + MINUTE)
            for start, _ in self.arrivals
        )


def _models(server: Server, config: str, agents: int) -> list[Model]:
    """`agents` models of SPEC, as the CLI makes a session's: one Backoff shared."""
    client = httpx.AsyncClient(transport=httpx.MockTransport(server.handle))
    backoff = Backoff()
    return [
        resolve_model(SPEC, env={}, http=client, config=parse_config(config), backoff=backoff)
        for _ in range(agents)
    ]


async def _calls(model: Model, n: int, waits: list[Waiting], text: str = "hi") -> None:
    for _ in range(n):
        got = []
        async with model.stream(_request(text)) as events:
            async for event in events:
                if isinstance(event, Waiting):
                    waits.append(event)
                elif isinstance(event, TextDelta):
                    got.append(event.text)
        assert "".join(got) == "ok"


async def test_no_more_requests_in_any_minute_than_rpm_from_all_agents_together(
    autojump_clock: trio.abc.Clock,
) -> None:
    server = Server(seconds=1.0)
    models = _models(server, '[limits."openai-compatible:m"]\nrpm = 3\n', agents=4)
    waits: list[Waiting] = []
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        for model in models:
            nursery.start_soon(_calls, model, 3, waits)
    assert len(server.arrivals) == 12
    assert server.most_in_a_minute() == 3
    # Three a minute, and no fewer: three in each of the first four minutes.
    minutes = Counter(int((t - start) // MINUTE) for t, _ in server.arrivals)
    assert minutes == {0: 3, 1: 3, 2: 3, 3: 3}
    assert waits
    assert {w.why for w in waits} == {"openai-compatible m keeps to 3 requests a minute ([limits])"}
    assert all(w.seconds is not None and 0 < w.seconds <= MINUTE for w in waits)


async def test_a_request_counts_its_estimated_tokens_before_it_is_sent(
    autojump_clock: trio.abc.Clock,
) -> None:
    """The server reports no usage: only the estimate from the request's size keeps the
    agents within tpm, counted on the server's side as the same estimate."""
    server = Server(seconds=1.0)
    text = "x" * 2000  # about 500 tokens a request with its framing
    probe = Server()
    await _calls(_models(probe, "", 1)[0], 1, [], text)
    tokens = math.ceil(len(probe.arrivals[0][1]) / CHARS_PER_TOKEN)
    tpm = 2 * tokens + tokens // 2  # two fit in a minute, not three
    models = _models(server, f'[limits."m"]\ntpm = {tpm}\n', agents=3)
    waits: list[Waiting] = []
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        for model in models:
            nursery.start_soon(_calls, model, 2, waits, text)
    assert len(server.arrivals) == 6
    assert server.most_in_a_minute(lambda body: math.ceil(len(body) / CHARS_PER_TOKEN)) <= tpm
    minutes = Counter(int((t - start) // MINUTE) for t, _ in server.arrivals)
    assert minutes == {0: 2, 1: 2, 2: 2}  # two a minute, and no fewer
    assert {w.why for w in waits} == {
        f"openai-compatible m keeps to {tpm} tokens a minute ([limits])"
    }


async def test_the_usage_reported_corrects_the_estimate(autojump_clock: trio.abc.Clock) -> None:
    """Each small request is estimated at a few tokens, but the server counts 900 for
    it (800 in, 100 out): with tpm 1000, one a minute, not all at once."""
    server = Server(usage=(800, 100))
    [model] = _models(server, f'[limits."{SPEC}"]\ntpm = 1000\n', agents=1)
    await _calls(model, 3, [])
    times = [t for t, _ in server.arrivals]
    assert [round(later - earlier) for earlier, later in pairwise(times)] == [60, 60]


def test_a_minute_window_table() -> None:
    """`Backoff.admit` on a clock the test moves (4 bytes a token): rpm, tpm, and a
    request larger than tpm, which waits for an empty minute and then goes alone."""
    now = [0.0]
    backoff = Backoff(clock=lambda: now[0])
    rate = Rate("m", rpm=2, tpm=100)

    def admit(size: int, at: float) -> float:
        now[0] = at
        return backoff.admit(backoff.ticket("k", rate, size))

    assert admit(40, at=0) == 0  # 10 tokens
    assert admit(40, at=10) == 0
    assert admit(40, at=10) == 50  # a third request: once the first leaves, at 60 s
    assert admit(40, at=60) == 0  # (it left)
    assert admit(400, at=60) == 60  # 100 tokens: once the minute is empty, at 120 s
    assert admit(400, at=70) == 50
    assert admit(400, at=120) == 0
    assert admit(4, at=120) == 60  # one token more is too many
    assert admit(800, at=180) == 0  # 200 tokens, more than tpm: alone, in an empty minute
    assert admit(4, at=181) == 59
    other = backoff.ticket("k", Rate("other", rpm=1), 4)
    assert backoff.admit(other) == 0  # another model keeps its own minute
    assert backoff.admit(backoff.ticket("k", Rate("other", rpm=1), 4)) == 60


def test_the_bytes_per_token_follow_what_the_provider_reported() -> None:
    backoff = Backoff(clock=lambda: 0.0)
    rate = Rate("m", tpm=1000)
    ticket = backoff.ticket("k", rate, 800)
    assert ticket.tokens == 200  # 4 bytes a token until the provider says
    ticket.settle(Usage(input_tokens=300, cache_read_tokens=100, output_tokens=50))
    assert ticket.tokens == 450  # input, cached input and output
    assert backoff.ticket("k", rate, 800).tokens == 400  # two bytes a token, as reported
    assert backoff.ticket("other-key", rate, 800).tokens == 200  # (another endpoint's own)


def test_the_estimate_is_compactions_own() -> None:
    assert CHARS_PER_TOKEN == compaction.CHARS_PER_TOKEN


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            '[limits."openai:gpt-4.1"]\n',
            "f.toml: limits.openai:gpt-4.1: Value error, a limit needs rpm (requests a "
            "minute), tpm (tokens a minute) or both",
        ),
        (
            '[limits."openai:gpt-4.1"]\nrpm = 0\n',
            "f.toml: limits.openai:gpt-4.1.rpm: Input should be greater than or equal to 1 "
            "(accepted: at least 1, at most 1000000000; got 0)",
        ),
        (
            '[limits."openai:gpt-4.1"]\ntpm = 1.5\n',
            "f.toml: limits.openai:gpt-4.1.tpm: Input should be a valid integer",
        ),
        (
            '[limits."openai:gpt-4.1"]\nrps = 3\n',
            "f.toml: limits.openai:gpt-4.1.rps: Extra inputs are not permitted",
        ),
    ],
)
def test_a_wrong_limit_is_one_line_naming_the_key(text: str, line: str) -> None:
    with pytest.raises(ConfigError, match="^" + re.escape(line)):  # the message starts so
        parse_config(text, source="f.toml")


def test_a_limit_is_looked_up_by_spec_then_by_model() -> None:
    config = parse_config('[limits."openai:gpt-4.1"]\nrpm = 3\n[limits.m]\ntpm = 9\n')
    assert config.limit("openai:gpt-4.1") == config.limits["openai:gpt-4.1"]
    assert config.limit("openrouter:m") == config.limits["m"]
    assert config.limit("openai:gpt-4.1-mini") is None
