"""Where a run is shown: at a terminal, the live view (`view/`) with the transcript's
lines printed above it; anywhere else, the transcript alone, or JSON lines.

The live view is for a person at a terminal: standard output is one, no `--json`,
`--plain` or `ORCHESTRATOR_PLAIN`, no `NO_COLOR` (https://no-color.org), and `TERM` is
not `dumb`. Otherwise the output is exactly the plain transcript's. rich is imported only
when the live view is shown, never by the command line's start-up.

A question asked at the terminal (a call's approval, the plan's, a task's revival)
`hold`s the screen: the frame as it stands stays, the question is asked below it, and
the view goes on below the answer. An agent asked about a call shows as needing input.

While a screen is `shown()`, the command's lines for people (`cli/out.py`) go through
its transcript: in order with it, and above the live view's frame.

It draws at most `--fps` frames a second, else `[view] fps`, else 10. For tests only,
`ORCHESTRATOR_FIXED_CLOCK=<seconds since the epoch>` stops the view's clock there: every
event and journal record is applied at that time, so elapsed times and spinners, and so
the screens, are the same at every run.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import trio

from orchestrator.cli.out import People
from orchestrator.cli.render import JsonLinesSink, TranscriptSink
from orchestrator.errors import ConfigError, OrchestratorError
from orchestrator.state.events import EventSink, FanOut

if TYPE_CHECKING:
    from orchestrator.config import Config
    from orchestrator.loop.todos import TodoList
    from orchestrator.prices.cost import Price
    from orchestrator.session.live import LiveSession
    from orchestrator.team.settings import RunSettings
    from orchestrator.view.live import LiveView


def screen_for(
    args: argparse.Namespace,
    live: LiveSession | None,
    config: Config,
    *,
    plan_only: bool = False,
    people: People | None = None,
) -> Screen:
    """The screen of a run of `live` (None: the demo's child, whose events come from
    another process): the live view at a terminal, else today's transcript, or JSON lines
    with `--json`. `plan` prints the plan alone on stdout (`plan GOAL > plan.md`): its
    transcript goes to stderr, with the lines for `people`."""
    plain = bool(getattr(args, "plain", False))
    people = people or People.of(args, plan_only=plan_only)
    if not plan_only and live_view_wanted(plain=plain, json_mode=args.json):
        screen = live_screen(
            directory=live.directory if live is not None else None,
            prices=dict(config.prices),
            todos_of=live.state.todo_list if live is not None else None,
            fps=getattr(args, "fps", None) or config.view.fps,
            clock=fixed_clock(os.environ),
        )
        screen.people = people
        return screen
    if args.json:
        return Screen(_json_sink(live), people=people)
    todos_of = live.state.todo_list if live is not None else None
    transcript = TranscriptSink(people.stream, todos_of=todos_of)
    return Screen(transcript, transcript=transcript, people=people)


def _json_sink(live: LiveSession | None) -> EventSink:
    if live is None:
        return JsonLinesSink(sys.stdout)
    live.track_seqs = True
    return JsonLinesSink(sys.stdout, session=live.id, seq_of=live.seq_of)


def live_view_wanted(
    *, plain: bool, json_mode: bool, out: TextIO | None = None, env: Mapping[str, str] | None = None
) -> bool:
    """Whether a run shows the live view (see the module's docstring)."""
    env = os.environ if env is None else env
    out = sys.stdout if out is None else out
    if plain or json_mode or env.get("ORCHESTRATOR_PLAIN") or env.get("NO_COLOR"):
        return False
    if env.get("TERM", "") == "dumb":
        return False
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


class _Above(io.StringIO):
    """A text stream whose whole lines go above the live view's frame (the transcript's
    text streamed mid-line waits for the end of its line)."""

    def __init__(self, view: LiveView) -> None:
        super().__init__()
        self._view = view
        self._pending = ""

    def write(self, text: str) -> int:
        *lines, self._pending = (self._pending + text).split("\n")
        for line in lines:
            self._view.print_above(line)
        return len(text)

    def isatty(self) -> bool:
        return False


class Screen:
    """A run's screen: `sink` for its events, `hold` for its questions, and `shown()`, the
    block during which the live view draws (nothing without one)."""

    def __init__(
        self,
        sink: EventSink,
        view: LiveView | None = None,
        *,
        transcript: TranscriptSink | None = None,
        people: People | None = None,
    ) -> None:
        self.sink = sink
        self.view = view
        self.transcript = transcript  # the transcript in `sink`, if it has one
        self.people = people or People()

    def know_models(self, settings: RunSettings) -> None:
        """Tell the live view the model each role is given (`model_names`)."""
        if self.view is not None:
            self.view.model.configure(model_names(settings))

    def say(self, text: str) -> None:
        """Print a line for people in the transcript (above the live view), or, without
        one (`--json`), to the people's stream."""
        if self.transcript is not None:
            self.transcript.say(text)
        else:
            self.people.say(text)

    @contextmanager
    def hold(self, agent: str = "", what: str = "") -> Iterator[None]:
        view = self.view
        if view is None:
            yield
            return
        if agent:
            view.model.approval_asked(agent, what)
        try:
            with view.paused():
                try:
                    yield
                finally:
                    if agent:
                        view.model.approval_answered(agent)
        finally:
            view.changed()

    @asynccontextmanager
    async def shown(self) -> AsyncIterator[None]:
        """The live view drawn for the block; its last frame stays on the screen. The
        lines for people said meanwhile go through the transcript (`say`)."""
        routed = self.people.through(self.say) if self.transcript is not None else nullcontext()
        with routed:
            if self.view is None:
                yield
                return
            try:
                async with trio.open_nursery() as nursery:
                    await nursery.start(self.view.run)
                    try:
                        yield
                    finally:
                        nursery.cancel_scope.cancel()
            except BaseExceptionGroup as group:
                # Ctrl+C or the run's error, grouped by the nursery: its callers expect it
                # bare (a KeyboardInterrupt is one line, not a traceback).
                if len(group.exceptions) == 1:
                    raise group.exceptions[0] from None
                raise


def model_names(settings: RunSettings) -> Callable[[str], str]:
    """The name of the model a role's agents call ("" when it cannot be made: the run
    says why when an agent of that role starts)."""

    def name(role: str) -> str:
        try:
            return settings.model_for(role).name
        except OrchestratorError:
            return ""

    return name


def fixed_clock(env: Mapping[str, str]) -> Callable[[], float] | None:
    """The view's clock stopped at `ORCHESTRATOR_FIXED_CLOCK` (tests only), None without."""
    text = env.get("ORCHESTRATOR_FIXED_CLOCK")
    if not text:
        return None
    try:
        at = float(text)
    except ValueError:
        raise ConfigError(
            f"ORCHESTRATOR_FIXED_CLOCK={text!r}: not a time (seconds since the epoch)"
        ) from None
    return lambda: at


def live_screen(
    *,
    directory: Path | None = None,
    prices: Mapping[str, Price] | None = None,
    todos_of: Callable[[str], TodoList] | None = None,
    out: TextIO | None = None,
    fps: float = 10.0,
    clock: Callable[[], float] | None = None,
) -> Screen:
    """The live view on `out` (standard output when None), its model seeded from the
    session's journal in `directory` (a resumed session shows its whole tree), with
    today's transcript above it. `clock`: the model's (a fixed one applies the journal's
    records at its time, not at the times they were written)."""
    from rich.console import Console

    from orchestrator.view.history import journal_events, session_view
    from orchestrator.view.live import LiveView
    from orchestrator.view.model import ViewModel

    if directory is not None and clock is None:
        model = session_view(directory, prices=prices)
    else:
        model = ViewModel(prices=prices, clock=clock or time.time)
        for _, record in journal_events(directory) if directory is not None else ():
            model.apply(record)
    view = LiveView(model, Console(file=out), fps=fps)
    transcript = TranscriptSink(_Above(view), color=True, todos_of=todos_of)
    return Screen(FanOut([view, transcript]), view, transcript=transcript)
