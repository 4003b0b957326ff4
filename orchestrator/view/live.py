"""The live view at work: a sink whose `emit` only applies the event to the model, and a
trio task that redraws the frame on the terminal at a bounded frame rate.

An agent that emits never waits for the terminal: `emit` folds the event and wakes the
drawer, nothing more. The drawer draws at once when woken, then sleeps a frame's
interval before it looks again, so a change is on screen within `1 / fps` seconds and a
burst of events costs at most one frame per interval. While the session runs it also
redraws every `tick` seconds without a change, so elapsed times and spinners move.

Drawing is one write: the cursor up over the last frame, the screen erased below it, the
lines given to `print_above` (a transcript's, all those of an interval), then the frame's
lines (`frame.terminal_lines`), the cursor left below it. The frame is cut to the
terminal's height less one line. `paused()` leaves the screen to a question: the frame
as it stands stays, the question is asked below it, and a new frame is drawn below the
answer. On a console that is no terminal only the lines above and the last frame are
written.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import trio
from rich.console import Console

from orchestrator.state.events import Event
from orchestrator.view.frame import at_most, terminal_lines
from orchestrator.view.model import ViewModel

HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"
ERASE_DOWN = "\r\x1b[J"  # from the cursor's line to the end of the screen


class LiveView:
    """An `EventSink` for the live view: `emit` applies each event to `model`; `run`
    (a task in the caller's nursery: `await nursery.start(view.run)`) draws it on
    `console`, at most `fps` frames a second. After something the events do not say
    (`model.approval_asked`), call `changed()`. `print_above(line)` prints a line (ANSI
    styling allowed) above the frame; `paused()` stops drawing while a question is
    asked. The console gives the terminal (its file), its size (read at each frame, so
    a resized terminal is drawn at its new size) and whether to colour."""

    def __init__(
        self,
        model: ViewModel,
        console: Console,
        *,
        fps: float = 10.0,
        tick: float = 0.25,
    ) -> None:
        self.model = model
        self.console = console
        self.interval = 1 / fps
        self.tick = tick
        self.frames = 0  # how many it drew
        self.drawn = -1  # the model's version the last frame showed
        self._wake = trio.Event()
        self._running = False  # between `run`'s start and its end
        self._height = 0  # lines of the frame on the screen above the cursor (0: none)
        self._above: list[str] = []
        self._paused = 0
        self._terminal = console.is_terminal
        self._color = console.color_system is not None and not console.no_color

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        self.model.apply(event)
        self._wake.set()

    def changed(self) -> None:
        """The model changed outside `emit`: draw it (within a frame's interval)."""
        self._wake.set()

    def print_above(self, line: str) -> None:
        """Print `line` above the frame at the next draw (within a frame's interval)."""
        self._above.append(line)
        self._wake.set()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """For a question asked at the terminal: the frame as it stands (and the lines
        waiting to go above it) drawn and left on the screen, nothing drawn until the
        block is left, then a new frame below what the block printed. Nests."""
        self._paused += 1
        try:
            if self._paused == 1 and self._running:
                self._draw(last=True)  # the frame stays, the cursor below it
            yield
        finally:
            self._paused -= 1
            if self._paused == 0 and self._running:
                self._cursor(HIDE_CURSOR)
                self._draw()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Draw until cancelled; the last frame is drawn as it stops, and stays."""
        self._running = True
        self._cursor(HIDE_CURSOR)
        task_status.started()
        try:
            while True:
                # A tick's wait, with the interval slept below: a frame every `tick`.
                idle = max(self.tick - self.interval, 0) if self._session_runs() else math.inf
                with trio.move_on_after(idle):
                    await self._wake.wait()
                # What changes within the interval after a change is drawn with it, in
                # one frame (a run's first burst of events too, and the whole of a run
                # shorter than the interval: its last frame only).
                await trio.sleep(self.interval)
                self._wake = trio.Event()
                if not self._paused:
                    self._draw()
        finally:
            self._running = False
            if not self._paused:
                if self._above or self.drawn != self.model.version or self.frames == 0:
                    self._draw(last=True)
                else:
                    self._cursor(SHOW_CURSOR)

    def _session_runs(self) -> bool:
        return self.model.ended is None and bool(self.model.agents)

    def _draw(self, *, last: bool = False) -> None:
        """Draw the frame over the last one, with the lines waiting above it; `last`: the
        frame stays where it is drawn (the next is drawn below it) and the cursor shows."""
        self.drawn = self.model.version
        above, self._above = self._above, []
        if not self._terminal and not last:
            if above:
                self._write("".join(line + "\n" for line in above))
            return
        width, height = self.console.size
        frame = at_most(
            terminal_lines(self.model, self.model.now(), width, color=self._color, still=last),
            height - 1,
        )
        text = "".join(line + "\n" for line in (*above, *frame))
        if self._terminal:
            up = f"\x1b[{self._height}A" if self._height else ""
            text = up + ERASE_DOWN + text + (SHOW_CURSOR if last else "")
        self._height = 0 if last else len(frame)
        self._write(text)
        self.frames += 1

    def _cursor(self, code: str) -> None:
        if self._terminal:
            self._write(code)

    def _write(self, text: str) -> None:
        file = self.console.file
        file.write(text)
        file.flush()


@asynccontextmanager
async def open_live_view(
    model: ViewModel,
    console: Console | None = None,
    *,
    fps: float = 10.0,
    tick: float = 0.25,
) -> AsyncIterator[LiveView]:
    """A `LiveView` drawing on `console` (the terminal when None) for the block's
    duration: give it as a run's sink (`on_event=view`), and leave the block when the
    run ends; the last frame stays on the screen."""
    view = LiveView(model, console or Console(), fps=fps, tick=tick)
    async with trio.open_nursery() as nursery:
        await nursery.start(view.run)
        try:
            yield view
        finally:
            nursery.cancel_scope.cancel()
