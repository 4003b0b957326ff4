"""Reading a journal from its end: where it ends, and its last record of one kind.

`sessions list` wants each session's last status without scanning its journal: the
manifest names a point of the journal it has seen (`since_seq`, `since_offset`), and
only what was appended after that point can say otherwise. `read_tail` reads that part
backwards, a chunk at a time, and stops at the first (last) record of the kind asked
for; a record counts only if its line is whole, passes its checksum, and lies in a whole
batch (what `scan_journal` would keep). It checks no more than that: `scan_journal`
remains the one full check.

Blocking; a few reads of one file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import orjson

from orchestrator.store._line import CRC_SUFFIX_LEN, MORE, line_fault

CHUNK = 1 << 16  # a finished session's last status is in its last few records


class JournalTail(msgspec.Struct, frozen=True):
    """The journal's end (its last whole batch's last seq, and the offset just after
    it) and the fields of the last record of the kind asked for after `since_offset`
    (None if none)."""

    last_seq: int
    end_offset: int
    found: dict[str, Any] | None


def read_tail(
    path: os.PathLike[str] | str,
    kind: str,
    *,
    since_seq: int = 0,
    since_offset: int = 0,
    chunk: int = CHUNK,
) -> JournalTail | None:
    """The end of the journal at `path` and its last `kind` record after `since_offset`
    (where record `since_seq + 1` must start). None when the journal does not continue
    from that point as it should (shorter, or another record there): then only a read
    from the start (`since_offset=0`) can tell. A missing file is an empty journal."""
    try:
        fd = os.open(Path(path), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None if since_offset else JournalTail(0, 0, None)
    try:
        size = os.fstat(fd).st_size
        if not _continues(fd, size, since_seq, since_offset):
            return None
        return _read_back(fd, size, kind.encode(), since_seq, since_offset, chunk)
    finally:
        os.close(fd)


def _continues(fd: int, size: int, seq: int, offset: int) -> bool:
    if size < offset or (offset and os.pread(fd, 1, offset - 1) != b"\n"):
        return False
    head = b'{"seq":%d,' % (seq + 1)
    return size == offset or os.pread(fd, len(head), offset) in (head, head[: size - offset])


def _read_back(
    fd: int, size: int, kind: bytes, since_seq: int, since_offset: int, chunk: int
) -> JournalTail:
    pattern = b',"k":"%s","a":' % kind
    end: tuple[int, int] | None = None  # (last seq, offset after it)
    carry = b""  # the start of a line whose beginning lies further left
    position = size
    while position > since_offset:
        start = max(since_offset, position - chunk)
        data = os.pread(fd, position - start, start) + carry
        # The part of `data` made of whole lines: from its first line start on.
        first = 0 if start == since_offset else data.find(b"\n") + 1
        if first == 0 and start != since_offset:
            carry, position = data, start  # no line starts here: read further left
            continue
        lines_end = data.rfind(b"\n") + 1  # a torn last piece is no record
        if end is None:
            end = _end_of(data, first, lines_end, start)
        if end is not None:
            found = _last_of(data, first, min(lines_end, end[1] - start), pattern)
            if found is not None:
                return JournalTail(end[0], end[1], found)
        carry, position = data[:first], start
    last_seq, end_offset = end or (since_seq, since_offset)
    return JournalTail(last_seq, end_offset, None)


def _end_of(data: bytes, first: int, stop: int, start: int) -> tuple[int, int] | None:
    """The last line of `data[first:stop]` that is a good record ending a batch, as
    (its seq, the absolute offset after it)."""
    while stop > first:
        line_start = data.rfind(b"\n", first, stop - 1) + 1
        line_start = max(line_start, first)
        line = data[line_start : stop - 1]
        if line_fault(line) is None and not line.endswith(MORE, 0, len(line) - CRC_SUFFIX_LEN):
            return _seq(line), start + stop
        stop = line_start
    return None


def _last_of(data: bytes, first: int, stop: int, pattern: bytes) -> dict[str, Any] | None:
    """The fields of the last good line in `data[first:stop]` whose frame's kind is the
    one `pattern` names."""
    at = data.rfind(pattern, first, stop)
    while at != -1:
        line_start = max(data.rfind(b"\n", first, at) + 1, first)
        line_end = data.find(b"\n", at)
        line = data[line_start:line_end]
        # The frame's own kind, not text inside a field: it follows `seq` and `t`.
        if line.find(b',"k":"') == at - line_start and line_fault(line) is None:
            fields: dict[str, Any] = orjson.loads(line)
            return fields
        at = data.rfind(pattern, first, at)
    return None


def _seq(line: bytes) -> int:
    return int(line[len(b'{"seq":') : line.index(b",")])
