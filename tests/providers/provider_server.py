"""A scripted HTTP/1.1 server on 127.0.0.1 for provider tests: real sockets, real chunked
framing, replies cut at awkward byte boundaries, and faults (drop, stall) on demand.

Each request takes the next `Reply`; a request with no reply left gets a 418 that no
adapter retries, so a test that sends more requests than it scripted fails loudly. A
server given a `handler` instead computes each reply from its request (after any scripted
replies), for a server whose answers depend on what it was sent.

`context_too_long(shape, ...)` is a context-too-long answer in a provider's real shape, and
a server given `window_chars` enforces a window itself: see `LoopbackServer`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never

import orjson
import trio

AWKWARD = (1, 2, 3, 5, 8, 13, 21, 4, 7)


@dataclass(frozen=True)
class Drop:
    """Close the connection right here, mid-response."""


@dataclass(frozen=True)
class Stall:
    """Send nothing more until the client goes away."""


Piece = bytes | Drop | Stall


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    pieces: list[Piece] = field(default_factory=list)
    chunked: bool = True
    before_headers: Drop | Stall | None = None

    @classmethod
    def sse(
        cls, events: Iterable[bytes], *, split: bool = True, tail: Iterable[Piece] = ()
    ) -> Reply:
        data = b"".join(events)
        pieces: list[Piece] = list(awkward_split(data)) if split else [data]
        return cls(headers={"content-type": "text/event-stream"}, pieces=[*pieces, *tail])

    @classmethod
    def json(cls, status: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
        return cls(
            status=status,
            headers={"content-type": "application/json", **(headers or {})},
            pieces=[orjson.dumps(body)],
            chunked=False,
        )

    @classmethod
    def drop_before_headers(cls) -> Reply:
        return cls(before_headers=Drop())

    @classmethod
    def stall_before_headers(cls) -> Reply:
        return cls(before_headers=Stall())


def awkward_split(data: bytes) -> list[bytes]:
    out: list[bytes] = []
    i = 0
    n = 0
    while i < len(data):
        size = AWKWARD[n % len(AWKWARD)]
        out.append(data[i : i + size])
        i += size
        n += 1
    return out


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


Handler = Callable[[Recorded], Reply]

ContextShape = Literal["openai", "vllm", "llama.cpp", "anthropic", "anthropic-413"]


def context_too_long(shape: ContextShape, *, limit: int, requested: int) -> Reply:
    """A context-too-long answer as each server words and shapes it: OpenAI's 400 with code
    `context_length_exceeded`, vLLM's flat `{"object": "error"}` 400, llama.cpp's 400
    `exceed_context_size_error` with `n_ctx` and `n_prompt_tokens` fields, Anthropic's 400
    "prompt is too long: N tokens > M maximum" and its 413 `request_too_large` (which states
    neither figure). `limit` is the window, `requested` the request's input in tokens."""
    error: dict[str, Any]
    match shape:
        case "openai":
            error = {
                "message": f"This model's maximum context length is {limit} tokens. However, "
                f"your messages resulted in {requested} tokens. Please reduce the length of "
                "the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
            return Reply.json(400, {"error": error})
        case "vllm":
            error = {
                "object": "error",
                "message": f"This model's maximum context length is {limit} tokens. However, "
                f"you requested {requested + 1000} tokens ({requested} in the messages, 1000 "
                "in the completion). Please reduce the length of the messages or completion.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
            return Reply.json(400, error)
        case "llama.cpp":
            error = {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": requested,
                "n_ctx": limit,
            }
            return Reply.json(400, {"error": error})
        case "anthropic":
            error = {
                "type": "invalid_request_error",
                "message": f"prompt is too long: {requested} tokens > {limit} maximum",
            }
            return Reply.json(400, {"type": "error", "error": error})
        case "anthropic-413":
            error = {"type": "request_too_large", "message": "Request exceeds the maximum size"}
            return Reply.json(413, {"type": "error", "error": error})
        case _:
            assert_never(shape)


_NOT_TEXT = {
    "role",
    "type",
    "id",
    "tool_call_id",
    "tool_use_id",
    "name",
    "cache_control",
    "signature",
}


def request_chars(request: Recorded) -> int:
    """The characters of a chat request's conversation, OpenAI's or Anthropic's: every string
    under `messages` and `system` (texts, tool call arguments and inputs, tool results),
    but for roles, types, ids and names. Tool specs are not counted."""
    try:
        body = request.json()
    except ValueError:
        return 0
    if not isinstance(body, dict):
        return 0
    return _chars(body.get("messages")) + _chars(body.get("system"))


def _chars(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_chars(item) for item in value)
    if isinstance(value, dict):
        return sum(_chars(item) for key, item in value.items() if key not in _NOT_TEXT)
    return 0


class LoopbackServer:
    """Set `window_chars` (at construction or on the `server` fixture) and the server
    enforces a window, as a model server does: a request whose conversation holds more
    than `window_chars` characters (`request_chars`) is answered with
    `context_too_long(window_shape, ...)`, stating a window of `window_chars //
    chars_per_token` tokens and the request's size likewise, without using up a scripted
    reply; one within it gets the next reply as usual. Such requests are also kept in
    `refused`. For a test of compaction: the request after a compaction must fit."""

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        handler: Handler | None = None,
        window_chars: int | None = None,
        window_shape: ContextShape = "openai",
        chars_per_token: int = 4,
    ) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.handler = handler
        self.window_chars = window_chars
        self.window_shape: ContextShape = window_shape
        self.chars_per_token = chars_per_token
        self.refused: list[Recorded] = []
        self.requests: list[Recorded] = []
        self.disconnects = 0
        self.disconnected = trio.Event()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, stream: trio.SocketStream) -> None:
        try:
            async with stream:
                request = await _read_request(stream)
                if request is None:
                    return
                self.requests.append(request)
                reply = self._next(request)
                await self._reply(stream, reply)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._note_disconnect()

    def _next(self, request: Recorded) -> Reply:
        chars = request_chars(request) if self.window_chars is not None else 0
        if self.window_chars is not None and chars > self.window_chars:
            self.refused.append(request)
            return context_too_long(
                self.window_shape,
                limit=self.window_chars // self.chars_per_token,
                requested=math.ceil(chars / self.chars_per_token),
            )
        if self.replies:
            return self.replies.popleft()
        return self.handler(request) if self.handler is not None else _unscripted()

    async def _reply(self, stream: trio.SocketStream, reply: Reply) -> None:
        if isinstance(reply.before_headers, Drop):
            return
        if isinstance(reply.before_headers, Stall):
            await self._wait_for_disconnect(stream)
            return
        head = [f"HTTP/1.1 {reply.status} X", "connection: close"]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        if reply.chunked:
            head.append("transfer-encoding: chunked")
        else:
            length = sum(len(p) for p in reply.pieces if isinstance(p, bytes))
            head.append(f"content-length: {length}")
        await stream.send_all(("\r\n".join(head) + "\r\n\r\n").encode())
        for piece in reply.pieces:
            if isinstance(piece, Drop):
                return
            if isinstance(piece, Stall):
                await self._wait_for_disconnect(stream)
                return
            if reply.chunked:
                piece = b"%x\r\n%s\r\n" % (len(piece), piece)
            await stream.send_all(piece)
        if reply.chunked:
            await stream.send_all(b"0\r\n\r\n")

    async def _wait_for_disconnect(self, stream: trio.SocketStream) -> None:
        while await stream.receive_some():
            pass
        self._note_disconnect()

    def _note_disconnect(self) -> None:
        self.disconnects += 1
        self.disconnected.set()


def _unscripted() -> Reply:
    return Reply.json(418, {"error": {"message": "the test scripted no reply for this request"}})


async def _read_request(stream: trio.SocketStream) -> Recorded | None:
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some()
        if not data:
            return None
        buffer += data
    head, _, body = buffer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        data = await stream.receive_some()
        if not data:
            return None
        body += data
    return Recorded(method, path, headers, body)


class Sleeps:
    """An injectable retry sleep that records instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        await trio.lowlevel.checkpoint()
