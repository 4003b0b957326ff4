"""A scripted HTTP/1.1 server on 127.0.0.1 for provider tests: real sockets, real chunked
framing, replies cut at awkward byte boundaries, and faults (drop, stall) on demand.

Each request takes the next `Reply`; a request with no reply left gets a 418 that no
adapter retries, so a test that sends more requests than it scripted fails loudly. A
server given a `handler` instead computes each reply from its request (after any scripted
replies), for a server whose answers depend on what it was sent.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

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


class LoopbackServer:
    def __init__(self, replies: Iterable[Reply] = (), *, handler: Handler | None = None) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.handler = handler
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
