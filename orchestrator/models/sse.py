"""A server-sent events decoder: bytes in, events out, no I/O.

`httpx.Response.aiter_lines` is not enough: a blank line ends an event, `:` lines are
comments, `data:` may span several lines, Anthropic names its events with `event:`, and
network chunks split lines (and CRLF pairs, and UTF-8 characters) anywhere. This follows
the WHATWG "event stream interpretation" rules, which both providers' SDKs follow too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


@final
class SSEDecoder:
    """Feed it chunks as they arrive; it returns the events they complete."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._started = False
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        self._buffer += chunk
        if not self._started:
            if len(self._buffer) < len(_BOM) and _BOM.startswith(bytes(self._buffer)):
                return []
            if self._buffer.startswith(_BOM):
                del self._buffer[: len(_BOM)]
            self._started = True
        events: list[ServerSentEvent] = []
        for line in self._take_lines():
            event = self._process(line)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[ServerSentEvent]:
        """The stream ended. An event whose lines all arrived but whose blank line did
        not is still dispatched (some servers omit the last one); a half-received line
        is dropped, since it may be cut anywhere."""
        # A CR held back in case an LF followed was a line end after all.
        events = self.feed(b"\n") if self._buffer.endswith(b"\r") else []
        self._buffer.clear()
        event = self._process(b"")
        return events if event is None else [*events, event]

    def _take_lines(self) -> list[bytes]:
        lines: list[bytes] = []
        buf = self._buffer
        start = 0
        while True:
            cr = buf.find(b"\r", start)
            lf = buf.find(b"\n", start)
            if cr == -1 and lf == -1:
                break
            if cr != -1 and (lf == -1 or cr < lf):
                if cr + 1 == len(buf):
                    break  # wait: the next chunk may begin with the LF of a CRLF
                lines.append(bytes(buf[start:cr]))
                start = cr + 2 if buf[cr + 1 : cr + 2] == b"\n" else cr + 1
            else:
                lines.append(bytes(buf[start:lf]))
                start = lf + 1
        del buf[:start]
        return lines

    def _process(self, raw: bytes) -> ServerSentEvent | None:
        line = raw.decode("utf-8", errors="replace")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = ServerSentEvent(
            event=self._event or "message",
            data="\n".join(self._data),
            id=self._id,
            retry=self._retry,
        )
        self._event = ""
        self._data = []
        return event
