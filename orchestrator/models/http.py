"""HTTP plumbing the provider adapters share: the client, the streamed call, and the one
place where HTTP failures become our `ModelError` classes (its options, timeouts and
retries with backoff: models/retrying.py).

An adapter supplies a `WireCall` (URL, headers, JSON body) and a `StreamDecoder` (a pure
state machine from server-sent events to `ModelEvent`s); `model_stream` does the rest.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
import msgspec
import orjson
import trio

from orchestrator.errors import ProviderFatal, ProviderTransient
from orchestrator.models.base import ModelEvent
from orchestrator.models.failures import error_from_response, transport_error
from orchestrator.models.retrying import HttpOptions as HttpOptions
from orchestrator.models.retrying import RetryPolicy as RetryPolicy
from orchestrator.models.retrying import Timeouts as Timeouts
from orchestrator.models.retrying import retrying
from orchestrator.models.sse import ServerSentEvent, SSEDecoder


def bearer_headers(extra: Mapping[str, str], api_key: str | None) -> dict[str, str]:
    """The headers of a streamed JSON call with an `Authorization: Bearer` key (OpenAI's
    chat completions and Responses API, and servers speaking them), `extra` after."""
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    headers.update(extra)
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


class WireCall(msgspec.Struct, frozen=True):
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
