"""How a model call is placed and retried: its HTTP options and timeouts, retries with
exponential backoff (a server's Retry-After first), and, with a `Backoff` shared by a
session's models, the endpoint's rate limits, concurrency and requests/tokens a minute."""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field

import httpx
import trio

from orchestrator.errors import ModelError, ProviderRateLimited
from orchestrator.messages import Usage
from orchestrator.models.base import ModelEvent, UsageReported, Waiting
from orchestrator.models.limits import CONCURRENCY, Backoff, Rate, Ticket

logger = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class Timeouts:
    """Seconds. `first_byte` bounds the wait from sending the request to the first byte
    of the body (a model may think for minutes); `idle` bounds each gap between chunks
    after that. httpx's own read timeout is off: it would bound both with one number."""

    connect: float = 10.0
    write: float = 30.0
    first_byte: float = 300.0
    idle: float = 120.0

    def for_httpx(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect, read=None, write=self.write, pool=self.connect)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; a server's Retry-After wins when it gives one.
    A Retry-After longer than `max_retry_after` is not waited out: the error is raised."""

    max_retries: int = 4
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def delay(self, retry: int, retry_after: float | None, rand: float) -> float | None:
        """Seconds to wait before retry number `retry` (0-based), or None to give up."""
        if retry_after is not None:
            return max(0.0, retry_after) if retry_after <= self.max_retry_after else None
        backoff = min(self.max_delay, self.base_delay * 2.0**retry)
        return backoff * (0.5 + rand / 2)


SHOWN_WAIT = 1.0
"""A wait before a call is sent that is said (a `Waiting` event) when at least this long."""


@dataclass(frozen=True)
class HttpOptions:
    """How an adapter talks HTTP. `client` is the session's shared client; without one,
    each call opens and closes its own. `backoff` is shared by the models of a session
    (see `Backoff`). `sleep` and `rand` are injectable for tests."""

    client: httpx.AsyncClient | None = None
    timeouts: Timeouts = field(default_factory=Timeouts)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    sleep: Sleep = trio.sleep
    rand: Callable[[], float] = random.random
    backoff: Backoff | None = None
    # The most calls at once on this endpoint (with a shared `backoff`, which lowers it
    # after a 429 or 529 and raises it back as calls go well).
    concurrency: int = CONCURRENCY
    # The requests and tokens a minute this model may be sent on this endpoint (with a
    # shared `backoff`, which counts them; None: no limit).
    rate: Rate | None = None


async def retrying(
    attempt: Callable[[], AsyncGenerator[ModelEvent]],
    http: HttpOptions,
    *,
    provider: str,
    key: str = "",
    size: int = 0,
) -> AsyncGenerator[ModelEvent]:
    """Run `attempt` until it succeeds. A retryable error is retried only while nothing
    has been yielded: after that the caller holds partial output, and a silent retry
    would duplicate it. With a shared `Backoff`, each attempt first waits out a rate
    limit another call was told about, and a rate limit told to this one holds all;
    with a `rate` too, it keeps to the model's requests and tokens a minute, counting
    the request's `size` (bytes) as tokens until the provider reports its usage."""
    retry = 0
    backoff = http.backoff
    while True:
        yielded = False
        ticket = None
        if backoff is not None:
            ticket = None if http.rate is None else backoff.ticket(key, http.rate, size)
            async with aclosing(_place(backoff, key, http, provider, ticket)) as waits:
                async for said in waits:
                    yield said
        ended = None  # how the attempt ended, for the endpoint's concurrency
        try:
            async with aclosing(_counted(attempt(), ticket)) as events:
                async for event in events:
                    yielded = True
                    yield event
            ended = "ok"
            return
        except GeneratorExit:  # the caller has what it wanted: the endpoint answered
            ended = "ok" if yielded else None
            raise
        except ModelError as exc:
            limited = isinstance(exc, ProviderRateLimited)
            ended = "limited" if limited else None
            if yielded or not exc.retryable or retry >= http.retry.max_retries:
                raise
            delay = http.retry.delay(retry, getattr(exc, "retry_after", None), http.rand())
            if delay is None:
                raise
            if backoff is not None and limited:
                backoff.hold(key, delay)
            logger.warning("%s: %s; retry %d in %.1fs", provider, exc, retry + 1, delay)
            why = f"{provider} {'is rate-limited' if limited else 'failed'}: trying again"
        finally:
            if backoff is not None:
                backoff.leave(key, limited=ended == "limited", ok=ended == "ok")
        if delay >= SHOWN_WAIT:  # (the other calls a hold holds say it at the top)
            yield Waiting(seconds=delay, why=why)
        await http.sleep(delay)
        retry += 1


async def _place(
    backoff: Backoff, key: str, http: HttpOptions, provider: str, ticket: Ticket | None
) -> AsyncGenerator[Waiting]:
    """Wait out a rate limit another call was told about, then for a place among the
    calls the endpoint takes at once, and take it; then, holding it, for a rate limit
    told meanwhile and for the model's minute to have room for the request (`ticket`),
    which then counts as sent. Each wait that is long is said."""
    held = f"{provider} is rate-limited (told to another call)"
    if (wait := backoff.remaining(key)) > 0:
        if wait >= SHOWN_WAIT:
            yield Waiting(seconds=wait, why=held)
        await http.sleep(wait)
    if backoff.full(key):
        full = f"{provider} takes {backoff.limit(key)} call(s) at once now, all running"
        yield Waiting(seconds=None, why=full)
    await backoff.enter(key, http.concurrency)
    try:
        while True:
            if (wait := backoff.remaining(key)) > 0:
                why = held
            elif ticket is not None and (wait := backoff.admit(ticket)) > 0:
                why = f"{provider} {_per_minute(ticket.rate)} ([limits])"
            else:
                return
            if wait >= SHOWN_WAIT:
                yield Waiting(seconds=wait, why=why)
            await http.sleep(wait)
    except BaseException:
        backoff.leave(key)  # (the place goes to the next call)
        raise


async def _counted(
    events: AsyncGenerator[ModelEvent], ticket: Ticket | None
) -> AsyncGenerator[ModelEvent]:
    """`events`; the usage they report, once they end, is the tokens `ticket` counts."""
    usage: Usage | None = None
    try:
        async with aclosing(events):
            async for event in events:
                if isinstance(event, UsageReported):
                    usage = event.usage if usage is None else usage + event.usage
                yield event
    finally:
        if ticket is not None and usage is not None:
            ticket.settle(usage)


def _per_minute(rate: Rate) -> str:
    """What `rate` allows, in words: "gpt-4.1 keeps to 30 requests a minute"."""
    amounts = [
        f"{count} {what}"
        for count, what in ((rate.rpm, "requests"), (rate.tpm, "tokens"))
        if count is not None
    ]
    return f"{rate.model} keeps to {' and '.join(amounts)} a minute"
