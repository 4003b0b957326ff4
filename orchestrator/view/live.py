"""The live view at work: a sink whose `emit` only applies the event to the model, and a
trio task that redraws a `rich.live.Live` from the model at a bounded frame rate.

An agent that emits never waits for the terminal: `emit` folds the event and wakes the
drawer, nothing more. The drawer draws at once when woken, then sleeps a frame's
interval before it looks again, so a change is on screen within `1 / fps` seconds and a
burst of events costs at most one frame per interval. While the session runs it also
redraws every `tick` seconds without a change, so elapsed times and spinners move.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import trio
from rich.console import Console, RenderableType
from rich.live import Live

from orchestrator.state.events import Event
from orchestrator.view.frame import rich_frame
from orchestrator.view.model import ViewModel

Frame = Callable[[ViewModel, float], RenderableType]


class LiveView:
    """An `EventSink` for the live view: `emit` applies each event to `model`; `run`
    (a task in the caller's nursery: `await nursery.start(view.run)`) draws it on
    `console`, at most `fps` frames a second. After something the events do not say
    (`model.approval_asked`), call `changed()`."""

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

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        self.model.apply(event)
        self._wake.set()

    def changed(self) -> None:
        """The model changed outside `emit`: draw it (within a frame's interval)."""
        self._wake.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Draw until cancelled; the last frame is drawn as it stops, and stays."""
        live = Live(
            console=self.console,
            auto_refresh=False,  # no thread of its own: this task draws
            redirect_stdout=False,
            redirect_stderr=False,
        )
        with live:
            task_status.started()
            try:
                while True:
                    # A tick's wait, with the interval slept below: a frame every `tick`.
                    idle = max(self.tick - self.interval, 0) if self._running() else math.inf
                    with trio.move_on_after(idle):
                        await self._wake.wait()
                    self._wake = trio.Event()
                    self._draw(live)
                    await trio.sleep(self.interval)
            finally:
                if self.drawn != self.model.version or self.frames == 0:
                    self._draw(live)

    def _running(self) -> bool:
        return self.model.ended is None and bool(self.model.agents)

    def _draw(self, live: Live) -> None:
        self.drawn = self.model.version
        live.update(self.frame(self.model, self.model.now()), refresh=True)
        self.frames += 1


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
