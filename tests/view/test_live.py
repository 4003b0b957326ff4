"""The live sink: `emit` only folds, the drawer draws at a bounded frame rate (a burst of
events makes a bounded number of frames, each change is drawn within a frame's
interval), and the last frame stays when the view closes. Trio's autojump clock stands
in for time; the terminal is a rich console writing to a string."""

from __future__ import annotations

import contextlib
import io
from collections.abc import AsyncIterator

import pytest
import trio
from rich.console import Console

from orchestrator import AgentStarted, SessionStatusChanged, TaskCreated, ToolProgress
from orchestrator.view import LiveView, ViewModel, open_live_view


@contextlib.asynccontextmanager
async def live_view(fps: int = 10, tick: float = 60) -> AsyncIterator[tuple[LiveView, io.StringIO]]:
    """A live view on trio's clock, drawing on a console 80 columns wide that writes to a
    string: (the view, what it wrote)."""
    model = ViewModel(clock=trio.current_time)
    out = io.StringIO()
    screen = Console(file=out, force_terminal=True, width=80, color_system=None)
    async with open_live_view(model, screen, fps=fps, tick=tick) as view:
        yield view, out


def progress(n: int) -> ToolProgress:
    return ToolProgress(agent="main", ref="1.0", tool="fetch", message=f"page {n}")


@pytest.mark.parametrize("fps", [10, 4, 30])
async def test_a_burst_of_a_thousand_events_makes_a_bounded_number_of_frames(
    autojump_clock: trio.testing.MockClock, fps: int
) -> None:
    async with live_view(fps=fps, tick=0.25) as (view, out):
        await view.emit(AgentStarted(agent="main", role="main", messages=()))
        for n in range(1000):  # a thousand events over one second
            await view.emit(progress(n))
            await trio.sleep(0.001)
        during = view.frames
        await trio.sleep(1 / fps + 0.001)  # (a frame at most an interval after the last change)
        assert view.drawn == view.model.version  # the last change is on the screen
    assert fps // 2 <= during <= fps + 2  # about `fps` frames in the second, not one an event
    assert "page 999" in out.getvalue()


async def test_events_without_a_checkpoint_make_one_frame(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with live_view() as (view, _):
        await trio.sleep(1)
        before = view.frames
        for n in range(1000):
            await view.emit(progress(n))  # emit never yields to the drawer
        assert view.frames == before
        await trio.sleep(0.101)  # (drawn one interval after the first of them)
        assert view.frames == before + 1


async def test_each_change_is_drawn_within_a_frames_interval(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with live_view() as (view, out):
        for n in range(20):
            await trio.sleep(0.037 * (n % 4))  # at different points of the interval
            await view.emit(progress(n))
            await trio.sleep(0.101)  # (drawn one interval after the change, with the rest)
            assert view.drawn == view.model.version
            assert f"page {n}" in out.getvalue()


async def test_the_view_redraws_while_the_session_runs_and_stops_after(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with live_view(tick=1.0) as (view, out):
        await view.emit(AgentStarted(agent="main", role="main", messages=()))
        await trio.sleep(10.15)  # no event: the elapsed time still moves
        assert 10 <= view.frames <= 12
        assert "10s" in out.getvalue()
        await view.emit(SessionStatusChanged(agent="main", status="completed"))
        await trio.sleep(0.2)
        ended = view.frames
        await trio.sleep(60)
        assert view.frames == ended  # nothing changes once it ended
    assert "1 done" in out.getvalue()


async def test_a_frame_taller_than_the_terminal_keeps_its_top_and_its_status_line(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = ViewModel(clock=trio.current_time)
    out = io.StringIO()
    screen = Console(file=out, force_terminal=True, width=80, height=6, color_system=None)
    async with open_live_view(model, screen, fps=10, tick=60) as view:
        await view.emit(AgentStarted(agent="main", role="main", messages=()))
        for n in range(1, 9):
            task = TaskCreated(agent="main", task=f"t{n}", agent_type="worker", description="")
            await view.emit(task)
    last = out.getvalue().rsplit("\x1b[J", 1)[1].removesuffix("\x1b[?25h").split("\n")
    assert len(last) == 6  # five lines, the cursor on the sixth
    assert last[0].startswith("● main main")
    assert last[1].startswith("├─ ◌ t1 worker")
    assert last[3] == "… 6 more lines"
    assert last[4].startswith("1 running · 8 waiting · ")


async def test_a_console_that_is_no_terminal_gets_the_lines_above_and_the_last_frame(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = ViewModel(clock=trio.current_time)
    out = io.StringIO()
    screen = Console(file=out, width=80)  # a file: no cursor moves, no colours
    async with open_live_view(model, screen, fps=10) as view:
        await view.emit(AgentStarted(agent="main", role="main", messages=()))
        view.print_above("first")
        await trio.sleep(1)
        assert out.getvalue() == "first\n"  # no frame drawn while it runs
        view.print_above("second")
    assert "\x1b" not in out.getvalue()
    first, second, frame, status = out.getvalue().splitlines()
    assert (first, second) == ("first", "second")
    assert frame.startswith("● main main  running")
    assert status.startswith("1 running · ")
