"""The live view at work: a sink whose `emit` only applies the event to the model, and a
trio task that redraws a `rich.live.Live` from the model at a bounded frame rate.

An agent that emits never waits for the terminal: `emit` folds the event and wakes the
drawer, nothing more. The drawer draws at once when woken, then sleeps a frame's
interval before it looks again, so a change is on screen within `1 / fps` seconds and a
burst of events costs at most one frame per interval. While the session runs it also
redraws every `tick` seconds without a change, so elapsed times and spinners move.

Lines given to `print_above` (a transcript) are printed above the frame, all those of an
interval at once, as it is drawn. `paused()` leaves the screen to a question: the frame
as it stands stays, the question is asked below it, and a new frame is drawn below the
answer.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

import trio
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.live import Live
from rich.segment import Segment

from orchestrator.state.events import Event
from orchestrator.view.frame import rich_frame
from orchestrator.view.model import ViewModel

Frame = Callable[[ViewModel, float], RenderableType]


class LiveView:
    """An `EventSink` for the live view: `emit` applies each event to `model`; `run`
    (a task in the caller's nursery: `await nursery.start(view.run)`) draws it on
    `console`, at most `fps` frames a second. After something the events do not say
    (`model.approval_asked`), call `changed()`. `print_above(line)` prints a line (ANSI
    styling allowed) above the frame; `paused()` stops drawing while a question is
    asked."""

    def __init__(
        self,
        model: ViewModel,
        console: Console,
        *,
        fps: float = 10.0,
        tick: float = 0.25,
        frame: Frame = rich_frame,
    ) -> None:
        self.model = model
        self.console = console
        self.interval = 1 / fps
        self.tick = tick
        self.frame = frame
        self.frames = 0  # how many it drew
        self.drawn = -1  # the model's version the last frame showed
        self._wake = trio.Event()
        self._live: Live | None = None  # None before `run`, after it, and while paused
        self._above: list[str] = []
        self._paused = 0

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
            if self._paused == 1 and self._live is not None:
                self._draw(self._live)
                self._live.stop()  # the frame stays, the cursor below it
            yield
        finally:
            self._paused -= 1
            if self._paused == 0 and self._live is not None:
                self._live = self._started()  # a new region below the question
                self._draw(self._live)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Draw until cancelled; the last frame is drawn as it stops, and stays."""
        self._live = self._started()
        task_status.started()
        try:
            while True:
                # A tick's wait, with the interval slept below: a frame every `tick`.
                idle = max(self.tick - self.interval, 0) if self._running() else math.inf
                with trio.move_on_after(idle):
                    await self._wake.wait()
                # What changes within the interval after a change is drawn with it, in
                # one frame (a run's first burst of events too, and the whole of a run
                # shorter than the interval: its last frame only).
                await trio.sleep(self.interval)
                self._wake = trio.Event()
                if not self._paused:
                    self._draw(self._live)
        finally:
            live, self._live = self._live, None
            if not self._paused:
                if self._above or self.drawn != self.model.version or self.frames == 0:
                    self._draw(live, last=True)
                live.stop()  # draws the frame it holds once more

    def _started(self) -> Live:
        live = Live(
            console=self.console,
            auto_refresh=False,  # no thread of its own: this task draws
            redirect_stdout=False,
            redirect_stderr=False,
        )
        live.start()
        return live

    def _running(self) -> bool:
        return self.model.ended is None and bool(self.model.agents)

    def _draw(self, live: Live, *, last: bool = False) -> None:
        """Draw the frame (and print the lines waiting above it); `last`: only give it
        to `live`, whose `stop` draws it."""
        self.drawn = self.model.version
        frame = self.frame(self.model, self.model.now())
        if last and not self._above:
            live.update(frame, refresh=False)
        elif self._above:
            # One print for every line of the interval: rich prints them above the
            # region and draws the frame below them.
            lines, self._above = _Lines(self._above), []
            live.update(frame, refresh=False)
            self.console.print(lines)
        else:
            live.update(frame, refresh=True)
        self.frames += 1


class _Lines:
    """Lines written as they are (a transcript's, styled with ANSI codes of its own and
    made safe as it composed them), without rich's parsing, wrapping or markup."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Segment("\n".join(self.lines) + "\n")


@asynccontextmanager
async def open_live_view(
    model: ViewModel,
    console: Console | None = None,
    *,
    fps: float = 10.0,
    tick: float = 0.25,
    frame: Frame = rich_frame,
) -> AsyncIterator[LiveView]:
    """A `LiveView` drawing on `console` (the terminal when None) for the block's
    duration: give it as a run's sink (`on_event=view`), and leave the block when the
    run ends; the last frame stays on the screen."""
    view = LiveView(model, console or Console(), fps=fps, tick=tick, frame=frame)
    async with trio.open_nursery() as nursery:
        await nursery.start(view.run)
        try:
            yield view
        finally:
            nursery.cancel_scope.cancel()
