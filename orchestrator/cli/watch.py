"""`orchestrator sessions watch ID|--last`: a session shown as `run` shows it, from its
journal, by a process that only reads (view/follow.py): never its lock, never a write.

A session running in another process is followed: what it wrote before is shown at once,
then each record as it is written, until the session ends or Ctrl+C (which stops the
watching, not the session). A finished session (or one whose process is gone) is
replayed from its journal at `--speed` (10: ten times faster than it happened, no wait
longer than two seconds; `--instant`: the end at once).

It is drawn as `run` draws: the live view at a terminal, the plain transcript's lines
without one (`--plain`, `NO_COLOR`, a pipe), JSON lines (`--json`) in `run --json`'s
shape, each with the seq and the time its record was written. What the watch itself says
(what it watches, how the session ended) goes to standard error, as `run`'s notes do.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import orjson
import trio

from orchestrator.cli.out import People
from orchestrator.cli.render import TranscriptSink
from orchestrator.cli.screen import Screen, live_screen, live_view_wanted
from orchestrator.cli.watch_workers import WorkerTasks
from orchestrator.errors import SessionError, bare
from orchestrator.layout import FORMAT_VERSION, JOURNAL, LOCK
from orchestrator.session.listing import find_session
from orchestrator.state.events import Event, NullSink, SessionStatusChanged, event_json
from orchestrator.state.manifest import read_manifest
from orchestrator.store.ids import session_dir
from orchestrator.store.tail import read_tail
from orchestrator.text import label
from orchestrator.view.follow import Pace, RecordEvents, follow_journal, holder_alive
from orchestrator.view.model import ViewModel

if TYPE_CHECKING:
    from orchestrator.prices.cost import Price

SPEED = 10.0  # a finished session replays ten times faster than it happened


@dataclass
class Watched:
    """How a watch ended: the session's last status and why, and whether Ctrl+C
    stopped the watching first."""

    status: str | None = None
    detail: str = ""
    interrupted: bool = False


def watch(
    args: argparse.Namespace, root: Path, load_prices: Callable[[], Mapping[str, Price]]
) -> int:
    session_id = find_session(root, args.session_id, last=args.last)
    directory = session_dir(root, session_id)
    manifest = read_manifest(directory)  # the error `sessions show` gives for no session
    if manifest.format_version < FORMAT_VERSION:
        raise SessionError(
            f"session {session_id} is of an older format ({manifest.format_version}); "
            f"`orchestrator sessions show {session_id}` brings it up to date (a watch "
            "only reads)"
        )
    live = _running(directory)
    speed = 0.0 if live or args.instant else args.speed
    how = "running: followed" if live else f"replayed at {speed:g}x" if speed else "replayed"
    people = People.of(args)  # stdout, as a run's lines for people; stderr under --json
    people.say(f"watching session {session_id} ({how}); Ctrl+C stops watching")
    prices = load_prices()
    try:
        watched = trio.run(_watch, directory, session_id, args, prices, speed, live, people.say)
    except KeyboardInterrupt:  # before the watch listened for it
        watched = Watched(interrupted=True)
    except BaseExceptionGroup as group:
        error = bare(group)
        if not isinstance(error, KeyboardInterrupt):
            raise error from None
        watched = Watched(interrupted=True)
    people.say(_ending(session_id, watched, live=live))
    return 0


def _running(directory: Path) -> bool:
    """Whether the session is running in a process now (or has not started yet), as
    its journal's last status and its lock file's holder say."""
    tail = read_tail(directory / JOURNAL, "session_status")
    status = tail.found.get("status") if tail is not None and tail.found else None
    return status is None or (status == "running" and holder_alive(directory / LOCK))


async def _watch(
    directory: Path,
    session_id: str,
    args: argparse.Namespace,
    prices: Mapping[str, Price],
    speed: float,
    live: bool,
    say: Callable[[str], None],
) -> Watched:
    pace = Pace(speed)
    clock = _Clock(time.time if live else pace.now)
    screen, json_lines = _screen(args, prices, clock, session_id)
    told = RecordEvents()
    watched = Watched()

    async def show(events: list[tuple[int | None, Event]], written: float) -> None:
        await pace.until(written)
        clock.showing = written
        for seq, event in events:
            if json_lines is not None:
                json_lines.write(event, seq, written)
            else:
                await screen.sink.emit(event)
        clock.showing = None

    async def show_task(event: Event, written: float) -> None:
        await show([(None, event)], written)  # (its seq is its journal's, not the session's)

    workers = WorkerTasks(args, session_id, show_task, say)
    with trio.open_signal_receiver(signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:

            async def stop_on_ctrl_c() -> None:
                async for _ in signals:
                    watched.interrupted = True
                    nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_ctrl_c)
            async with (
                screen.shown(),
                contextlib.aclosing(follow_journal(directory)) as entries,
            ):
                try:
                    async for entry in entries:
                        await workers.until(entry.time)
                        await show(told.of(entry.seq, entry.record), entry.time)
                        await workers.notice(entry.record, nursery, live=live)
                        if isinstance(entry.record, SessionStatusChanged):
                            watched.status = entry.record.status
                            watched.detail = entry.record.detail
                    await workers.finish()
                finally:
                    workers.close()
            nursery.cancel_scope.cancel()
    return watched


class _Clock:
    """The live view's clock: while a record is shown, the time it was written (the
    view applies each event at its clock's time); between two, the replay's time, or
    the wall's for a session followed as it runs."""

    def __init__(self, between: Callable[[], float]) -> None:
        self.between = between
        self.showing: float | None = None

    def __call__(self) -> float:
        return self.between() if self.showing is None else self.showing


def _screen(
    args: argparse.Namespace, prices: Mapping[str, Price], clock: _Clock, session_id: str
) -> tuple[Screen, JsonLines | None]:
    """The live view at a terminal (its model's clock the replay's), else the plain
    transcript, or JSON lines."""
    if args.json:
        return Screen(NullSink()), JsonLines(sys.stdout, session_id)
    if not live_view_wanted(plain=args.plain, json_mode=False):
        return Screen(TranscriptSink()), None
    screen = live_screen(prices=prices)
    assert screen.view is not None
    # A model of the watch's own: its clock (`_Clock`) makes each record count from the
    # time it was written, which the model `live_screen` makes would take for now.
    screen.view.model = ViewModel(prices=prices, clock=clock)
    return screen, None


class JsonLines:
    """`run --json`'s lines of the events told again: each event's fields, `session`,
    `seq` (of the record it tells, when it tells one) and `time` (when that record was
    written, UTC, ISO 8601)."""

    def __init__(self, out: TextIO, session: str) -> None:
        self.out = out
        self.session = session

    def write(self, event: Event, seq: int | None, written: float) -> None:
        line = event_json(event)
        line["session"] = self.session
        if seq is not None:
            line["seq"] = seq
        line["time"] = datetime.fromtimestamp(written, UTC).isoformat(timespec="milliseconds")
        self.out.write(orjson.dumps(line).decode() + "\n")
        self.out.flush()


def _ending(session_id: str, watched: Watched, *, live: bool) -> str:
    again = f"orchestrator sessions watch {session_id}"
    if watched.interrupted:
        if live:
            return f"stopped watching; session {session_id} goes on (watch it again: {again})"
        return f"stopped watching (watch it again: {again})"
    if watched.status in (None, "running"):
        return (
            f"session {session_id} stopped: its process is gone (continue it with: "
            f"orchestrator resume {session_id})"
        )
    detail = f" ({label(watched.detail, 400)})" if watched.detail else ""
    return f"session {session_id} {watched.status}{detail}"
