"""Reading a journal: the committed records, and what a crash left half-written.

`scan_journal(path, after_seq=0)` reads `journal.jsonl` at once and checks every line's
frame and checksum (cheap: no JSON parsing), that seqs run 1, 2, 3, ... without a gap,
and that the journal ends on a batch end. Given a `JournalMark` (where the journal stood
when a snapshot was taken: its seq, length and CRC-32), it checks that prefix with one
CRC over its bytes instead of line by line: the bytes are exactly the ones written, so
every line in it is whole, in sequence and checksummed; only the lines after it are
checked one by one. When the prefix does not match, every line is checked.

It keeps the lines of the records after `after_seq` as `Frame`s, unparsed: the session
layer parses and validates each line in one step, so no record is decoded twice.

What a crash can leave at the end is cut, not an error: a torn or checksum-failing last
line, and records of a batch whose end never reached the disk (`JournalScan.cut` says
what, for the caller to warn; `open_journal` truncates it away before appending). Any
other fault (a bad line with lines after it, a seq gap or repeat) raises `JournalCorrupt`
naming the file, line and seq: that is not a crash's doing, and dropping records
silently would be worse than stopping. `repair_journal` is the way out.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import zlib
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import orjson

from orchestrator.errors import JournalCorrupt
from orchestrator.store._line import (
    CRC_SUFFIX_LEN,
    MORE,
    SEQ_PREFIX,
    line_fault,
)

JsonObject = dict[str, Any]


class Parsed(NamedTuple):
    """A record's line, parsed: the frame's parts and the record's own fields."""

    seq: int
    time_ms: int
    kind: str
    agent: str
    body: JsonObject


class JournalMark(NamedTuple):
    """The journal up to record `seq`: its first `offset` bytes, whose CRC-32 is `crc`."""

    seq: int
    offset: int
    crc: int


class Frame(NamedTuple):
    """One committed record as stored: its seq and its line (without the newline),
    checked but not parsed."""

    seq: int
    line: bytes

    def fields(self) -> JsonObject:
        """The line as JSON: the frame's keys (`seq`, `t`, `k`, `a`, `crc`, and `more`
        inside a batch) and the record's own fields."""
        value: JsonObject = orjson.loads(self.line)
        return value

    def parsed(self) -> Parsed:
        fields = self.fields()
        parts = [fields.pop(key) for key in ("seq", "t", "k", "a", "crc")]
        fields.pop("more", None)
        return Parsed(parts[0], parts[1], parts[2], parts[3], fields)


class TailCut(msgspec.Struct, frozen=True):
    """The end of a journal that a crash left half-written, and that resume drops.

    `offset` is where the cut starts (the end of the last whole batch) and `nbytes` how
    much follows it; `first_seq`..`last_seq` are the seqs the cut lines carry (a torn
    line counts as the seq it would have had)."""

    offset: int
    nbytes: int
    first_seq: int
    last_seq: int
    reason: str

    @property
    def records(self) -> int:
        return self.last_seq - self.first_seq + 1

    def describe(self) -> str:
        """One line for a warning: which seqs, how many bytes, where, and why."""
        seqs = f"seq {self.first_seq}"
        if self.last_seq != self.first_seq:
            seqs += f"-{self.last_seq}"
        noun = "record" if self.records == 1 else "records"
        where = f"{self.nbytes} bytes at offset {self.offset}"
        return f"{seqs} ({self.records} {noun}, {where}): {self.reason}"

    def __str__(self) -> str:
        return self.describe()


class JournalScan(msgspec.Struct, frozen=True):
    """What `scan_journal` found.

    The committed records with seq > `after_seq`, in order, checked and unparsed, are
    `head` then `tail`: `head` holds those inside the prefix a `JournalMark` vouched for,
    as the journal's bytes (newline-separated lines, not split: a resume decodes them in
    one call), and `tail` the rest, a line each. `lines` gives them all as lines (the
    first is seq `after_seq + 1`), `records` as `Frame`s. `last_seq` is the last
    committed seq (0 for an empty journal) whatever `after_seq` was, and `end_offset`
    the byte offset just after it, where the next append goes; `end` is the mark of that
    point. `file_size` is the file's size as read; it exceeds `end_offset` exactly when
    `cut` is set."""

    path: Path
    head: memoryview
    tail: list[bytes]
    last_seq: int
    end_offset: int
    file_size: int
    cut: TailCut | None
    end: JournalMark
    after_seq: int = 0
    _split: list[list[bytes]] = msgspec.field(default_factory=list)  # (`lines`, once split)

    @property
    def lines(self) -> list[bytes]:
        """Every kept record's line (the head is split the first time it is asked for)."""
        if not self.head:
            return self.tail
        if not self._split:
            self._split.append(bytes(self.head).split(b"\n")[:-1] + self.tail)
        return self._split[0]

    @property
    def records(self) -> list[Frame]:
        return [Frame(seq, line) for seq, line in enumerate(self.lines, self.after_seq + 1)]


class Fault(msgspec.Struct, frozen=True):
    """The first line that is not a good record in sequence."""

    line: int  # 1-based; also the seq that belongs on it
    seq: int  # the seq the line claims when readable, else `line`
    offset: int
    reason: str
    is_last_line: bool


class Walk(msgspec.Struct, frozen=True):
    """A journal read up to its first fault: the part to keep, and the fault."""

    head: memoryview  # the kept records inside the known prefix, as bytes (see JournalScan)
    tail: list[bytes]  # the kept records after it, up to the last whole batch
    last_seq: int  # of the last whole batch before the fault (or the end)
    end_offset: int
    next_seq: int  # the seq that belongs on the fault's line; one past the end without a fault
    fault: Fault | None


NOTHING_KNOWN = JournalMark(0, 0, 0)


def walk_journal(
    data: bytes, after_seq: int, known: JournalMark = NOTHING_KNOWN, first: int = 0
) -> Walk:
    """Read `data` line by line until the first fault; keep whole batches only, of the
    records after `after_seq`. The prefix `known` (a `JournalMark` that `data` holds, as
    `holds` found) is not checked again, nor split into lines. `first`: the seq of the
    record before `data`'s first line (0: `data` is the whole journal); `known` then
    counts its offset from there."""
    # Building ~100k dicts would set off the cyclic GC over and over, for nothing: the
    # records are acyclic and kept. Pausing it makes a full scan about twice as fast.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _walk(data, after_seq, known, first)
    finally:
        if gc_was_enabled:
            gc.enable()


def _walk(data: bytes, after_seq: int, known: JournalMark, before: int) -> Walk:
    # The hot loop: two C checks per line, no JSON parsing and nothing else. A line is
    # good when it starts with its own seq and ends with the checksum of what precedes
    # it; offsets and batch ends are worked out afterwards, from the lines' lengths.
    crc32 = zlib.crc32
    base, first = known.offset, known.seq  # known good: `first` records in `base` bytes
    lines = (data[base:] if base else data).split(b"\n")
    torn = lines.pop()  # b"" when the data ends with a newline, as it should
    good = len(lines)  # of the lines after the known prefix
    fault = None
    for seq, line in enumerate(lines, first + 1):
        if not (
            line.startswith(b'{"seq":%d,' % seq)
            and line.endswith(b',"crc":"%08x"}' % crc32(line[:-CRC_SUFFIX_LEN]))
        ):
            good = seq - first - 1
            offset = base + _offset(lines, good)
            last = offset + len(line) + 1 == len(data)
            fault = _line_fault(line, seq, offset, last)
            break
    else:
        if torn:
            seq = first + good + 1
            fault = Fault(seq, seq, len(data) - len(torn), "is torn (no newline)", True)
    # Keep whole batches only: back from the last good line to the end of a batch (the
    # known prefix ends on one).
    end = good
    while end and lines[end - 1].endswith(MORE, 0, len(lines[end - 1]) - CRC_SUFFIX_LEN):
        end -= 1
    head = (
        memoryview(data)[_line_start(data, after_seq - before) : base]
        if after_seq < first
        else _EMPTY
    )
    tail = lines[max(after_seq - first, 0) : end] if first + end > after_seq else []
    return Walk(head, tail, first + end, base + _offset(lines, end), first + good + 1, fault)


_EMPTY = memoryview(b"")


def _line_start(data: bytes, seq: int) -> int:
    """Where line `seq + 1` of `data` starts (0 for the first)."""
    offset = 0
    for _ in range(seq):
        offset = data.index(b"\n", offset) + 1
    return offset


def holds(data: bytes, mark: JournalMark, base: JournalMark = NOTHING_KNOWN) -> bool:
    """Whether `data` (the journal's bytes from `base` on) starts with the bytes `mark`
    names: as long, with the same CRC-32, ending with the line of record `mark.seq`,
    which ends a batch (as a writer's mark always does)."""
    size = mark.offset - base.offset
    if not 0 < size <= len(data) or data[size - 1] != ord("\n"):
        return False
    with memoryview(data) as view:
        if zlib.crc32(view[:size], base.crc) != mark.crc:
            return False
    last_line = data.rfind(b"\n", 0, size - 1) + 1
    ends_batch = not data.endswith(MORE, last_line, size - 1 - CRC_SUFFIX_LEN)
    return ends_batch and data.startswith(b'{"seq":%d,' % mark.seq, last_line)


def _offset(lines: list[bytes], count: int) -> int:
    """Where line `count + 1` starts: the first `count` lines and their newlines."""
    return sum(map(len, itertools.islice(lines, count))) + count


def _line_fault(line: bytes, expected: int, offset: int, is_last_line: bool) -> Fault:
    """Say what is wrong with a line that failed the fast check (line number == `expected`)."""
    claimed = expected
    if line.startswith(SEQ_PREFIX):
        with contextlib.suppress(ValueError):
            claimed = int(line[len(SEQ_PREFIX) : line.find(b",")])
    reason = line_fault(line)
    if reason is None:
        # Well-formed but out of sequence: never a torn write, even on the last line.
        reason = f"is out of sequence (seq {expected} belongs there)"
        is_last_line = False
    return Fault(expected, claimed, offset, reason, is_last_line)


def scan_journal(
    path: os.PathLike[str] | str,
    *,
    after_seq: int = 0,
    mark: JournalMark | None = None,
    start: JournalMark | None = None,
) -> JournalScan:
    """Read and check the whole journal at `path`; see the module docstring. `mark`: a
    prefix known to have been written whole (from the snapshot), checked by its CRC.
    `start`: a point inside that prefix (its mark, as the writer had it) before which
    nothing is wanted (`after_seq` is not before it): the journal is then read from
    there only, and the part up to `mark` checked by one CRC continued from `start`'s.
    Anything unexpected there (a tail to cut, a CRC that does not match) reads the
    whole journal instead.

    A missing file scans as an empty journal (a session that has not written a record
    yet). Raises `JournalCorrupt` for corruption before the end, `OSError` when the
    file cannot be read. Blocking: on the trio loop, run it in a thread."""
    path = Path(path)
    if start is not None and mark is not None and start.seq <= after_seq:
        found = _scan_from(path, after_seq, mark, start)
        if found is not None:
            return found
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    known = mark if mark is not None and holds(data, mark) else NOTHING_KNOWN
    walk = walk_journal(data, after_seq, known)
    fault = walk.fault
    if fault is not None and not fault.is_last_line:
        raise corrupt_error(path, data, fault)
    cut = None
    if walk.end_offset < len(data):
        cut = _tail_cut(walk, len(data))
    with memoryview(data) as view:
        end_crc = zlib.crc32(view[known.offset : walk.end_offset], known.crc)
    end = JournalMark(walk.last_seq, walk.end_offset, end_crc)
    return JournalScan(
        path, walk.head, walk.tail, walk.last_seq, walk.end_offset, len(data), cut, end, after_seq
    )


def _scan_from(
    path: Path, after_seq: int, mark: JournalMark, start: JournalMark
) -> JournalScan | None:
    """`scan_journal` of the journal from `start` on, when everything there is as the
    snapshot said; None to read it all instead."""
    if not 0 < start.offset < mark.offset:
        return None
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            file.seek(start.offset)
            data = file.read()
    except OSError:
        return None
    if not data.startswith(b'{"seq":%d,' % (start.seq + 1)) or not holds(data, mark, start):
        return None
    known = JournalMark(mark.seq, mark.offset - start.offset, mark.crc)
    walk = walk_journal(data, after_seq, known, start.seq)
    if walk.fault is not None or walk.end_offset < len(data):
        return None  # (what to cut or report is said by the whole scan)
    with memoryview(data) as view:
        end_crc = zlib.crc32(view[known.offset : walk.end_offset], known.crc)
    end_offset = start.offset + walk.end_offset
    end = JournalMark(walk.last_seq, end_offset, end_crc)
    return JournalScan(
        path, walk.head, walk.tail, walk.last_seq, end_offset, size, None, end, after_seq
    )


def corrupt_error(path: Path, data: bytes, fault: Fault) -> JournalCorrupt:
    following = len(data) - fault.offset
    return JournalCorrupt(
        f"{path} line {fault.line} (seq {fault.seq}) {fault.reason}; {following} bytes run "
        "from its start to the end of the file, so this is not a torn tail. Repairing the "
        "journal keeps the whole batches before it and moves the original aside.",
        path=path,
        line=fault.line,
        seq=fault.seq,
    )


def _tail_cut(walk: Walk, size: int) -> TailCut:
    partial = walk.next_seq - 1 - walk.last_seq  # whole records of an unfinished batch
    parts = []
    if partial:
        noun = "record" if partial == 1 else "records"
        parts.append(f"partial batch ({partial} {noun} without a batch end)")
    if walk.fault is not None:
        parts.append(f"the last line {walk.fault.reason}")
    last_seq = walk.next_seq if walk.fault is not None else walk.next_seq - 1
    return TailCut(
        offset=walk.end_offset,
        nbytes=size - walk.end_offset,
        first_seq=walk.last_seq + 1,
        last_seq=last_seq,
        reason=", then ".join(parts),
    )
