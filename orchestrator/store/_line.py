"""One journal line: how a record is framed, so the writer and the scanner agree.

```
{"seq":7,"time":1763866390.25,"kind":"tool_started","agent":"main","body":{...},"end":true,"crc":"1a2b3c4d"}\\n
```

orjson writes the keys in this order with no spaces, so a line always starts with
`{"seq":` and ends with a fixed-width checksum field: reading a line's seq, batch flag
and checksum needs no JSON parsing. The checksum is zlib's CRC-32, written as 8 lower-case
hex digits, over every byte of the line before `,"crc":"`.
"""

from __future__ import annotations

import zlib
from typing import Any

import orjson

SEQ_PREFIX = b'{"seq":'
CRC_KEY = b',"crc":"'
# `,"crc":"` + 8 hex digits + `"}`: the line's last bytes before its newline.
CRC_SUFFIX_LEN = len(CRC_KEY) + 8 + 2
END_TRUE = b',"end":true'
END_FALSE = b',"end":false'


def encode(seq: int, time: float, kind: str, agent: str, body: Any, *, end: bool) -> bytes:
    """The line for one record, newline included. Raises orjson's `JSONEncodeError`
    (a `TypeError`) when `body` holds something JSON cannot carry."""
    head = orjson.dumps({"seq": seq, "time": time, "kind": kind, "agent": agent, "body": body})
    content = head[:-1] + (END_TRUE if end else END_FALSE)
    return b'%s,"crc":"%08x"}\n' % (content, zlib.crc32(content))


def line_fault(line: bytes) -> str | None:
    """Why `line` (newline excluded) is not a well-framed record with a good checksum;
    None when it is. The scanner's fast path checks the same; this says which part failed."""
    if len(line) < len(SEQ_PREFIX) + CRC_SUFFIX_LEN + len(END_TRUE):
        return "is too short to be a record"
    if not line.startswith(SEQ_PREFIX):
        return 'does not start with {"seq":'
    content = line[:-CRC_SUFFIX_LEN]
    if line[-CRC_SUFFIX_LEN : -CRC_SUFFIX_LEN + len(CRC_KEY)] != CRC_KEY or line[-2:] != b'"}':
        return "has no checksum field at its end"
    if b"%08x" % zlib.crc32(content) != line[-10:-2]:
        return "fails its checksum"
    if not (content.endswith(END_TRUE) or content.endswith(END_FALSE)):
        return "has no batch-end flag"
    return None
