"""HTTP plumbing the provider adapters share: the client, timeouts, retries with backoff,
and the one place where HTTP failures become our `ModelError` classes.

An adapter supplies a `WireCall` (URL, headers, JSON body) and a `StreamDecoder` (a pure
state machine from server-sent events to `ModelEvent`s); `model_stream` does the rest.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
import orjson
import trio

from orchestrator.errors import (
    ModelError,
    ProviderFatal,
    ProviderRateLimited,
    ProviderTransient,
)
from orchestrator.messages import Usage
from orchestrator.models.base import ModelEvent, UsageReported, Waiting
from orchestrator.models.failures import error_from_response, transport_error
from orchestrator.models.limits import CONCURRENCY, Backoff, Rate, Ticket
from orchestrator.models.sse import ServerSentEvent, SSEDecoder

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


def bearer_headers(extra: Mapping[str, str], api_key: str | None) -> dict[str, str]:
    """The headers of a streamed JSON call with an `Authorization: Bearer` key (OpenAI's
    chat completions and Responses API, and servers speaking them), `extra` after."""
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    headers.update(extra)
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


@dataclass(frozen=True)
class WireCall:
    """One POST. `headers` may hold an API key: never log or print them."""

    url: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]

    def __repr__(self) -> str:
        return f"WireCall(url={self.url!r})"


class StreamDecoder(Protocol):
    """Turns one response's server-sent events into model events. Raises `ModelError`
    for an error the stream reports. `done` is true once the provider's end marker came."""

    @property
    def done(self) -> bool: ...

    def feed(self, event: ServerSentEvent) -> list[ModelEvent]: ...

    def finish(self) -> list[ModelEvent]: ...


def make_client(timeouts: Timeouts | None = None, *, trust_env: bool = True) -> httpx.AsyncClient:
    """The one client a session shares (use it as `async with make_client() as client`)."""
    return httpx.AsyncClient(
        timeout=(timeouts or Timeouts()).for_httpx(),
        trust_env=trust_env,
        follow_redirects=False,
    )


@asynccontextmanager
async def model_stream(
    http: HttpOptions,
    call: WireCall,
    new_decoder: Callable[[], StreamDecoder],
    *,
    provider: str,
) -> AsyncIterator[AsyncIterator[ModelEvent]]:
    """Open a streamed model call, retrying failures that happen before any event was
    yielded. Leaving the context closes the HTTP stream (also on cancellation)."""
    async with AsyncExitStack() as stack:
        client = http.client
        if client is None:
            client = await stack.enter_async_context(make_client(http.timeouts))
        content = orjson.dumps(call.body)

        def attempt() -> AsyncGenerator[ModelEvent]:
            assert client is not None
            request = client.build_request(
                "POST",
                call.url,
                headers=dict(call.headers),
                content=content,
                timeout=http.timeouts.for_httpx(),
            )
            return _decoded(client, request, new_decoder(), http.timeouts, provider)

        key = _backoff_key(call)
        events = retrying(attempt, http, provider=provider, key=key, size=len(content))
        stack.push_async_callback(events.aclose)
        yield events


def _backoff_key(call: WireCall) -> str:
    """The endpoint and its credentials, hashed (the key itself is never kept)."""
    host = urlsplit(call.url).netloc
    secrets = sorted(
        f"{name.lower()}={value}"
        for name, value in call.headers.items()
        if name.lower() in ("authorization", "x-api-key", "api-key")
    )
    return hashlib.sha256("\n".join([host, *secrets]).encode()).hexdigest()[:32]


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


async def _decoded(
    client: httpx.AsyncClient,
    request: httpx.Request,
    decoder: StreamDecoder,
    timeouts: Timeouts,
    provider: str,
) -> AsyncGenerator[ModelEvent]:
    async with aclosing(open_sse(client, request, timeouts, provider=provider)) as sse:
        async for event in sse:
            for model_event in decoder.feed(event):
                yield model_event
            if decoder.done:
                break
    for model_event in decoder.finish():
        yield model_event


async def open_sse(
    client: httpx.AsyncClient, request: httpx.Request, timeouts: Timeouts, *, provider: str
) -> AsyncGenerator[ServerSentEvent]:
    """Send `request` and yield the server-sent events of its response."""
    first_byte_deadline = trio.current_time() + timeouts.first_byte
    try:
        with trio.fail_at(first_byte_deadline):
            response = await client.send(request, stream=True)
    except trio.TooSlowError:
        raise ProviderTransient(
            f"no response within {timeouts.first_byte:g}s", provider=provider
        ) from None
    except httpx.TransportError as exc:
        raise transport_error(exc, provider) from exc
    try:
        if response.status_code >= 400 or _is_json(response):
            body = await _read_body(response, timeouts.idle, provider)
            raise error_from_response(response.status_code, response.headers, body, provider)
    except BaseException:
        await response.aclose()
        raise
    decoder = SSEDecoder()
    chunks = response.aiter_bytes()
    deadline: float | None = first_byte_deadline  # until the first chunk, then idle gaps
    try:
        while True:
            chunk = await _next_chunk(chunks, deadline, timeouts, provider)
            if chunk is None:
                break
            deadline = None
            for event in decoder.feed(chunk):
                yield event
        for event in decoder.close():
            yield event
    finally:
        await response.aclose()
        await _unwind(chunks)


async def _unwind(chunks: AsyncIterator[bytes]) -> None:
    """End httpx's chain of nested async generators behind `aiter_bytes` after the
    response was closed early. Closing the outer one would leave the inner ones to the
    garbage collector (trio warns about each); resuming it instead makes the innermost
    read fail on the closed connection, which finishes every generator in the chain.
    Only data already buffered can come first, so this ends quickly; the time limit
    covers transports that do not fail on a closed stream."""
    with contextlib.suppress(Exception), trio.move_on_after(1.0):
        while True:
            await anext(chunks)


async def _next_chunk(
    chunks: AsyncIterator[bytes], deadline: float | None, timeouts: Timeouts, provider: str
) -> bytes | None:
    limit = trio.current_time() + timeouts.idle if deadline is None else deadline
    try:
        with trio.fail_at(limit):
            return await anext(chunks, None)
    except trio.TooSlowError:
        what = "no data" if deadline is not None else "stream stalled: no data"
        seconds = timeouts.first_byte if deadline is not None else timeouts.idle
        raise ProviderTransient(f"{what} for {seconds:g}s", provider=provider) from None
    except httpx.TransportError as exc:
        raise transport_error(exc, provider) from exc


async def _read_body(response: httpx.Response, idle: float, provider: str) -> bytes:
    try:
        with trio.fail_after(idle):
            return await response.aread()
    except trio.TooSlowError:
        return b""
    except httpx.TransportError as exc:
        raise transport_error(exc, provider) from exc


def _is_json(response: httpx.Response) -> bool:
    # A server that ignored `stream: true` (or a proxy's error page sent as 200).
    return str(response.headers.get("content-type", "")).startswith("application/json")


# --- error mapping: the one place HTTP failures become ModelError classes ---------------


def json_data(event: ServerSentEvent, provider: str) -> Any:
    """The JSON payload of an event; a payload that does not parse is a protocol
    mismatch (TLS rules out corruption), so retrying will not help."""
    try:
        return orjson.loads(event.data)
    except orjson.JSONDecodeError:
        raise ProviderFatal(
            f"malformed event from the provider: {event.data[:200]!r}", provider=provider
        ) from None
