"""The live view's cost (issue 24's measure): W1 with the live view rendering to a
pseudo-terminal against W1 without it, alternately in one script.

    .venv/bin/python tests/benchmarks/bench_view.py [--runs N]

W1 is bench_team.py's: a real session on disk (`batch` journal), the main agent and 8
subagents of 20 rounds each, the scripted model answering at once. Four ways to show it,
run in turn (A B C D, A B C D, ... `--runs` times each, 7 by default), each a fresh
session:

- `none`: no screen at all (`NullSink`, W1 as bench_team.py times it);
- `view`: the live view alone (`LiveView`, 10 frames a second) drawing on a
  pseudo-terminal;
- `plain`: today's transcript (`TranscriptSink`, coloured) written to the
  pseudo-terminal, as `run --plain` at a terminal;
- `screen`: what `run` shows at a terminal now, the live view with the transcript's
  lines printed above it (`cli.screen.live_screen`).

A thread reads the terminal's other end as fast as it can (a terminal that keeps up);
what it reads is thrown away. The time is `drive`'s, from the first round to the last
frame drawn, per model round; the medians, and the ratios `view / none` and `screen /
plain` (the target: at most 1.10) are printed.
"""

from __future__ import annotations

import argparse
import os
import pty
import shutil
import statistics
import sys
import tempfile
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from typing import Any, TextIO

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from orchestrator.cli.render import TranscriptSink  # noqa: E402
from orchestrator.cli.screen import Screen, live_screen  # noqa: E402
from orchestrator.session.live import open_session  # noqa: E402
from orchestrator.state.events import NullSink  # noqa: E402
from orchestrator.store import Durability  # noqa: E402
from orchestrator.team.drive import drive  # noqa: E402
from orchestrator.tools import ToolRegistry  # noqa: E402
from orchestrator.view import LiveView, ViewModel  # noqa: E402
from tests.benchmarks.bench_team import (  # noqa: E402
    DEFINITIONS,
    W1_ROUNDS,
    W1_TASKS,
    Brain,
    Fixed,
    Timing,
    _check,
    _session,
)
from tests.benchmarks.shape import bench_session, bench_settings  # noqa: E402

COLS, ROWS = 120, 50
WAYS = ("none", "view", "plain", "screen")


class Terminal:
    """A pseudo-terminal whose other end a thread drains; `out` writes to it."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self.out: TextIO = open(self.slave, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        self.read = 0
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self.read += len(chunk)

    def console(self) -> Console:
        return Console(file=self.out, width=COLS, height=ROWS, force_terminal=True)


def _screen(way: str, terminal: Terminal, directory: Path) -> Screen:
    match way:
        case "none":
            return Screen(NullSink())
        case "view":
            view = LiveView(ViewModel(), terminal.console(), fps=10)
            return Screen(view, view)
        case "plain":
            return Screen(TranscriptSink(terminal.out, color=True))
        case "screen":
            return live_screen(directory=directory, out=terminal.out)
    raise ValueError(way)


async def run_w1(root: Path, way: str, terminal: Terminal) -> tuple[Timing, int]:
    brain = Brain(W1_TASKS, W1_ROUNDS)
    session_id, _ = bench_session(root)
    async with open_session(root, session_id, durability=Durability.BATCH, warn=print) as live:
        screen = _screen(way, terminal, live.directory)
        settings = bench_settings(
            brain,
            tools=ToolRegistry([Fixed()]),
            ui=screen.sink,
            definitions=DEFINITIONS,
            session=_session(brain),
        )
        shown: AbstractAsyncContextManager[Any] = (
            screen.shown() if screen.view is not None else nullcontext()
        )
        with Timing() as timing:
            async with shown:
                result = await drive(live, settings)
        _check(live.state, brain.tasks, result.status)
    return timing, brain.calls


def run_once(way: str, terminal: Terminal) -> float:
    """One W1 run shown `way`, in a fresh directory: ms of wall time per model round."""
    root = Path(tempfile.mkdtemp(prefix="bench-view-"))
    try:
        timing, calls = trio.run(run_w1, root, way, terminal)
    finally:
        shutil.rmtree(root)
    return timing.wall * 1000 / calls


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each way (at least 5)")
    args = parser.parse_args(argv)
    terminal = Terminal()
    for way in WAYS:  # warm-up: imports, schemas, rich's first renders
        run_once(way, terminal)
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    for _ in range(args.runs):
        for way in WAYS:
            times[way].append(run_once(way, terminal))
    median: Callable[[str], float] = lambda way: statistics.median(times[way])  # noqa: E731
    for way in WAYS:
        shown = ", ".join(f"{t:.3f}" for t in times[way])
        print(f"W1 {way:<6} {median(way):.3f} ms/round (median of {args.runs}: {shown})")
    print(f"view / none:    {median('view') / median('none'):.2f}")
    print(f"screen / plain: {median('screen') / median('plain'):.2f}")
    print(f"screen / none:  {median('screen') / median('none'):.2f}")
    print(f"({terminal.read:,} bytes written to the terminal in all)")


if __name__ == "__main__":
    main()
