"""The runs of a session: the stretches of time in which a process drove it, read from
its journal's records, so that what people read as the time a task or the session took
is the time it ran, not the days between a crash and a resume (nor the hours a chat
waited for its person).

A run begins at a `session_status` record of status `running` (the records before the
first, a new session's settings and its main agent's start, are the first run's), and
ends at the next `session_status` record of another status (a clean end: completed,
blocked, interrupted, ...), or, when the run was killed, at its last record before the
next run began (the settings a resume journals before its `running` are the resume's).
A record between two runs that ended cleanly (a compaction by hand) is no run's; after a
killed run, it is taken for that run's last.

`Runs` takes the records one at a time (`seen`, as the live view folds them);
`journal_runs` reads them from a journal's lines, looking at few of them; `ran` is how
long a span of time overlaps the runs: the one computation of every duration shown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import orjson

from orchestrator.layout import JOURNAL
from orchestrator.store._line import line_kind, line_time

Span = tuple[float, float]
"""A run: when it began and when it ended, in seconds since the epoch."""


class Runs:
    """The runs of a session's records seen so far, in order (see the module)."""

    def __init__(self) -> None:
        self.closed: list[Span] = []
        self._start: float | None = None  # the run going on, or the last one killed
        self._last = 0.0  # the time of its latest record
        self._began = False  # its `running` record seen

    def seen(self, at: float, status: str = "", *, preamble: bool = False) -> None:
        """A record written at `at`; `status`: the status a `session_status` record sets;
        `preamble`: a record a run writes before its `running` (its settings)."""
        if status == "running" and self._start is not None and not self._began:
            self._began = True  # the first run, its first records before it
        elif status == "running":
            self._close()
            self._start, self._began = at, True
        elif self._start is None and not self.closed:
            self._start = at  # the session's first records: its first run's
        elif preamble:
            return  # the next run's, not the one before
        if self._start is not None:
            self._last = at
            if status and status != "running":
                self._close()

    def saw(self, at: float) -> None:
        """`seen(at)` of a record that sets no status (the fold's hot path)."""
        if self._start is not None:
            self._last = at

    def spans(self, now: float | None = None) -> list[Span]:
        """Every run, the one going on (or killed last) until `now` when given, else
        until its latest record."""
        if self._start is None:
            return list(self.closed)
        end = self._last if now is None else max(self._last, now)
        return [*self.closed, (self._start, end)]

    def _close(self) -> None:
        if self._start is not None:
            self.closed.append((self._start, self._last))
            self._start = None


def ran(spans: Sequence[Span] | None, start: float, end: float) -> float:
    """The seconds of [`start`, `end`] within `spans` (no spans, None: all of them)."""
    if spans is None:
        return max(end - start, 0.0)
    return sum(max(min(end, e) - max(start, s), 0.0) for s, e in spans)


def total(spans: Sequence[Span]) -> float:
    """How long the runs took together."""
    return ran(spans, -math.inf, math.inf)


_STATUS = b"session_status"
PREAMBLE = "settings"
"""The kind of record a run writes before its `running` one."""
_PREAMBLE = PREAMBLE.encode()


def journal_runs(lines: Sequence[bytes]) -> Runs:
    """The runs of a journal's lines (whole records, in order). Only the first and last
    lines, the `session_status` ones and the line before each run's start are parsed."""
    runs = Runs()
    if not lines:
        return runs
    runs.seen(_time(lines[0]))
    for n, line in enumerate(lines):
        if line_kind(line) == _STATUS:
            status = str(orjson.loads(line).get("status", ""))
            before = n - 1
            while status == "running" and before > 0 and line_kind(lines[before]) == _PREAMBLE:
                before -= 1
            if status == "running" and before >= 0:
                runs.seen(_time(lines[before]))
            runs.seen(_time(line), status)
    runs.seen(_time(lines[-1]))
    return runs


def read_runs(directory: Path) -> list[Span]:
    """The runs of the session in `directory`, as its journal on disk says (read as it
    is, unchecked: for what people read; a torn last line is left out)."""
    try:
        lines = (directory / JOURNAL).read_bytes().splitlines()
    except OSError:
        return []
    while lines and not _whole(lines[-1]):
        lines.pop()
    return journal_runs(lines).spans()


def _time(line: bytes) -> float:
    """A line's `t`, in seconds."""
    return line_time(line) / 1000


def _whole(line: bytes) -> bool:
    try:
        line_time(line)
        line_kind(line)
    except ValueError:
        return False
    return line.endswith(b'"}')
