"""The chat's terminal: an input line with history and editing (prompt_toolkit, on a
thread of its own with its own asyncio loop), the live view drawn under it as its
toolbar, and everything the run prints shown above it.

trio never waits for the terminal: each typed line (or Ctrl+C, or Ctrl+D) is handed to
trio through a memory channel; the view is drawn on trio's side (the live view's own
coloured lines, `view.frame.terminal_lines`) at a bounded rate, and the input thread
only shows the latest text. What the
run prints goes through prompt_toolkit's `patch_stdout`, above the input line.
"""

from __future__ import annotations

import enum
import math
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from orchestrator.state.events import Event
from orchestrator.view.frame import at_most, terminal_lines
from orchestrator.view.model import ViewModel

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession


class Key(enum.Enum):
    """What was typed that is not a line."""

    INTERRUPT = "Ctrl+C"
    END = "Ctrl+D"


Typed = str | Key


class ToolbarView:
    """An `EventSink` that folds each event into `model` and redraws the frame (into
    `frame`, the input line's toolbar: the live view's lines, SGR-coloured, in half the
    window) at most `fps` times a second, and every `tick` seconds while agents run
    (spinners, elapsed times)."""

    def __init__(
        self,
        model: ViewModel,
        redraw: Callable[[], None],
        *,
        fps: float = 10.0,
        tick: float = 0.25,
        size: Callable[[], tuple[int, int]] = lambda: shutil.get_terminal_size(),
    ) -> None:
        self.model = model
        self.frame = ""
        self.frames = 0
        self._redraw = redraw
        self._interval = 1 / fps
        self._tick = tick
        self._size = size
        self._wake = trio.Event()

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        self.model.apply(event)
        self._wake.set()

    def changed(self) -> None:
        self._wake.set()

    def draw(self) -> None:
        columns, rows = self._size()
        shown = terminal_lines(self.model, self.model.now(), max(columns - 1, 20))
        self.frame = "\n".join(at_most(shown, rows // 2))
        self.frames += 1
        self._redraw()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self.draw()
        task_status.started()
        while True:
            running = self.model.ended is None and bool(self.model.agents)
            with trio.move_on_after(max(self._tick - self._interval, 0) if running else math.inf):
                await self._wake.wait()
            await trio.sleep(self._interval)
            self._wake = trio.Event()
            self.draw()


class InputLine:
    """The input line on a thread of its own: `start` it with where typed things go;
    `prompt` is what it shows before the cursor; `toolbar` what it shows below."""

    def __init__(self, *, history: Path | None = None, prompt: str = "› ") -> None:
        self.prompt = prompt
        self.toolbar: Callable[[], str] = str  # SGR-coloured text
        self._history = history
        self._session: PromptSession[str] | None = None
        self._stopping = False
        self._thread: threading.Thread | None = None

    def start(self, send: trio.MemorySendChannel[Typed]) -> None:
        token = trio.lowlevel.current_trio_token()
        self._thread = threading.Thread(target=self._loop, args=(send, token), daemon=True)
        self._thread.start()

    def ask(self, prompt: str) -> None:
        """Show `prompt` before the cursor from now on."""
        self.prompt = prompt
        self.redraw()

    def redraw(self) -> None:
        """Draw the input line and its toolbar again (from any thread)."""
        app = self._session.app if self._session is not None else None
        if app is not None and app.is_running:
            app.invalidate()

    def stop(self) -> None:
        """End the input line (from any thread): its last prompt is left as it is."""
        self._stopping = True
        app = self._session.app if self._session is not None else None
        if app is not None and app.is_running and app.loop is not None:
            app.loop.call_soon_threadsafe(lambda: app.exit(exception=EOFError()))
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self, send: trio.MemorySendChannel[Typed], token: trio.lowlevel.TrioToken) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.formatted_text import ANSI
        from prompt_toolkit.history import FileHistory, InMemoryHistory
        from prompt_toolkit.styles import Style

        history = FileHistory(str(self._history)) if self._history else InMemoryHistory()
        self._session = PromptSession(
            history=history,
            bottom_toolbar=lambda: ANSI(self.toolbar()),
            style=Style.from_dict({"bottom-toolbar": "noreverse"}),
        )
        while not self._stopping:
            typed: Typed
            try:
                typed = self._session.prompt(lambda: self.prompt)
            except KeyboardInterrupt:
                typed = Key.INTERRUPT
            except EOFError:
                typed = Key.END
            if self._stopping:
                return
            try:
                trio.from_thread.run_sync(send.send_nowait, typed, trio_token=token)
            except (trio.RunFinishedError, trio.ClosedResourceError, trio.BrokenResourceError):
                return


def history_file(root: Path) -> Path:
    """Where the chat keeps what was typed (one history for every session)."""
    return root / "chat_history"
