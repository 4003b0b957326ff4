"""Reading a session's journal back into its spans (tracing/spans.py): where a traced
run starts, the spans of the runs before it are known again by their keys. When the last
run was killed (its status never came), its spans are given again: those it ended (the
kill may have caught them in the exporter's queue: at least once, a span id the backend
may have), and those it left open, ended as interrupted at its last record's time."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import msgspec

from orchestrator.layout import JOURNAL
from orchestrator.state.events import SessionStatusChanged, decode_record
from orchestrator.tracing.ended import Ended
from orchestrator.tracing.spans import Spans

MS = 1_000_000  # ns in a ms: the journal's times are in ms


class _Frame(msgspec.Struct):
    seq: int
    t: int


_FRAME = msgspec.json.Decoder(_Frame)


def read_back(directory: Path, spans: Spans) -> list[Ended]:
    """Fold the journal of the session in `directory` into `spans`; when its last run
    was killed, that run's spans (see the module). The session is open (its torn tail,
    if any, already cut), so every line is a whole record."""
    try:
        data = (directory / JOURNAL).read_bytes()
    except FileNotFoundError:
        return []
    last_run: list[Ended] = []  # the spans ended since the last run started
    running = False
    for line in data.splitlines():
        if not line:
            continue
        frame = _FRAME.decode(line)
        record = decode_record(line)
        ended = spans.see(record, frame.t * MS, frame.seq)
        if isinstance(record, SessionStatusChanged):
            running = record.status == "running"
            last_run = []
        else:
            last_run += ended
    return [*last_run, *spans.interrupt(spans.last_at)] if running else []


def read_rows(rows: Iterable[tuple[int, bytes]], spans: Spans) -> list[Ended]:
    """Fold a task's journal on a worker (`rows`: seq and line, from the engine's
    database) into `spans` (`Spans.on_worker`), before a worker runs the task: the spans
    its earlier runs ended (a worker killed may not have sent them: at least once), and
    those a worker that stopped left open, ended as interrupted at the last record's
    time. None for a task that has not begun."""
    ended: list[Ended] = []
    for seq, line in rows:
        body = line.rstrip(b"\n")
        ended += spans.see(decode_record(body), _FRAME.decode(body).t * MS, seq)
    return [*ended, *spans.interrupt(spans.last_at)]
