"""The live view's model of a session on disk: its journal's records, each with the time
it was written, applied in order. What `sessions show` will draw as the live view does,
and what `sessions watch` replays (at a chosen speed) or follows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from orchestrator.layout import JOURNAL
from orchestrator.session.replay import decode_records
from orchestrator.state.events import Record
from orchestrator.store.scan import scan_journal
from orchestrator.view.model import ViewModel

if TYPE_CHECKING:
    from orchestrator.prices.cost import Price


class _Written(msgspec.Struct):
    """The one frame field a replay needs besides the record: when it was written."""

    t: int  # wall time, ms


_WRITTEN = msgspec.json.Decoder(_Written)


def written_at(line: bytes) -> float:
    """When a journal line's record was written: wall time, in seconds."""
    return _WRITTEN.decode(line).t / 1000


def journal_events(directory: Path) -> Iterator[tuple[float, Record]]:
    """Each record of the session's journal (a session of this format) with the wall
    time, in seconds, at which it was written. A line that is not a record of its kind is
    `JournalCorrupt`, named by file and seq; a torn last line is left out."""
    scan = scan_journal(directory / JOURNAL)
    lines = scan.lines
    records = decode_records(scan.path, lines, scan.after_seq + 1)
    for line, (_, record) in zip(lines, records, strict=True):
        yield written_at(line), record


def session_view(
    directory: Path,
    *,
    prices: Mapping[str, Price] | None = None,
    clock: Callable[[], float] = time.time,
) -> ViewModel:
    """The view of a session as its journal leaves it (a finished one, or one that
    stopped): every record applied at the time it was written. `clock` is the model's
    for what is applied later (a session that goes on)."""
    model = ViewModel(prices=prices, clock=clock)
    for at, record in journal_events(directory):
        model.apply(record, at=at)
    return model
