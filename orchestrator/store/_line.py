"""One journal line: how a record is framed, so the writer and the scanner agree.

```
{"seq":7,"t":1763866390250,"k":"result","a":"main","ref":"5.0","content":"ok","crc":"1a2b3c4d"}\\n
{"seq":8,"t":1763866390251,"k":"msg","a":"w1",...,"more":1,"crc":"1a2b3c4d"}\\n
```

The frame is `seq` (first), `t` (Unix milliseconds), `k` (kind) and `a` (agent), then
the record's own fields, flat, then `"more":1` on every record of a batch but its last,
then the checksum (last). orjson writes the keys in this order with no spaces, so a line
always starts with `{"seq":` and ends with a fixed-width checksum field: reading a line's
seq, batch flag and checksum needs no JSON parsing. The checksum is zlib's CRC-32, written
as 8 lower-case hex digits, over every byte of the line before `,"crc":"`.
"""

from __future__ import annotations

import zlib
from typing import Any

import orjson

SEQ_PREFIX = b'{"seq":'
CRC_KEY = b',"crc":"'
# `,"crc":"` + 8 hex digits + `"}`: the line's last bytes before its newline.
CRC_SUFFIX_LEN = len(CRC_KEY) + 8 + 2
MORE = b',"more":1'
FRAME_KEYS = frozenset({"seq", "t", "k", "a", "more", "crc"})
"""Keys the frame owns; a record's own fields may not use them."""


def encode(seq: int, time_ms: int, kind: str, agent: str, body: Any, *, end: bool) -> bytes:
    """The line for one record, newline included. Raises `TypeError` when `body` is not a
    dict, uses a frame key, or holds something JSON cannot carry (orjson's
    `JSONEncodeError` is a `TypeError`)."""
    if not isinstance(body, dict):
        raise TypeError(f"a record body must be a dict, not {type(body).__name__}")
    clash = FRAME_KEYS.intersection(body)
    if clash:
        raise TypeError(f"a record body may not use the frame's keys: {sorted(clash)}")
    head = orjson.dumps({"seq": seq, "t": time_ms, "k": kind, "a": agent, **body})
    content = head[:-1] if end else head[:-1] + MORE
    return b'%s,"crc":"%08x"}\n' % (content, zlib.crc32(content))


def line_kind(line: bytes) -> bytes:
    """A line's `k`, read from its frame without parsing it (`ValueError` when the line
    has none)."""
    start = line.index(b',"k":"') + 6
    return line[start : line.index(b'"', start)]


def line_time(line: bytes) -> int:
    """A line's `t` (Unix milliseconds), read from its frame without parsing it
    (`ValueError` when the line has none)."""
    start = line.index(b',"t":') + 5
    return int(line[start : line.index(b",", start)])


def line_fault(line: bytes) -> str | None:
    """Why `line` (newline excluded) is not a well-framed record with a good checksum;
    None when it is. The scanner's fast path checks the same; this says which part failed."""
    if len(line) < len(SEQ_PREFIX) + CRC_SUFFIX_LEN + 1:
        return "is too short to be a record"
    if not line.startswith(SEQ_PREFIX):
        return 'does not start with {"seq":'
    content = line[:-CRC_SUFFIX_LEN]
    if line[-CRC_SUFFIX_LEN : -CRC_SUFFIX_LEN + len(CRC_KEY)] != CRC_KEY or line[-2:] != b'"}':
        return "has no checksum field at its end"
    if b"%08x" % zlib.crc32(content) != line[-10:-2]:
        return "fails its checksum"
    return None
