"""A pseudo-terminal a test drives: the real command line runs on it as a person's
program would (the terminal is its controlling one, so Ctrl+C typed is SIGINT and a
resize is SIGWINCH), and pyte is the screen its output is drawn on (answering the
cursor position requests a terminal answers, as prompt_toolkit asks them)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

import pyte

FIXED_CLOCK = "1800000000"  # the view's clock at 2027-01-15 08:00 UTC, for every test


def _controlling_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # after setsid: stdin's terminal is ours


class Terminal:
    """`orchestrator ARGS` on a terminal of `cols` x `rows`, its environment without
    NO_COLOR or ORCHESTRATOR_PLAIN, the view's clock fixed (`FIXED_CLOCK`)."""

    def __init__(
        self, args: list[str], *, cols: int = 120, rows: int = 50, cwd: Path | None = None
    ) -> None:
        self.master, slave = pty.openpty()
        self._size(slave, cols, rows)
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "ORCHESTRATOR_PLAIN")}
        env |= {"TERM": "xterm-256color", "ORCHESTRATOR_FIXED_CLOCK": FIXED_CLOCK}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
            preexec_fn=_controlling_terminal,
            cwd=cwd,
        )
        os.close(slave)
        self.screen = _Answering(cols, rows, self.master)
        self._stream = pyte.ByteStream(self.screen)
        self.raw = b""
        self._closed = False

    @staticmethod
    def _size(fd: int, cols: int, rows: int) -> None:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def _read(self, timeout: float) -> bool:
        """Feed what the program wrote within `timeout` to the screen; False at its end."""
        if self._closed:
            return False
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: every end of the terminal closed
            chunk = b""
        if not chunk:
            self._closed = True
            return False
        self.raw += chunk
        self._stream.feed(chunk)
        return True

    def wait_for(self, pattern: bytes, *, after: int = 0, timeout: float = 60) -> int:
        """Read until `pattern` (a regular expression) is in what was written after byte
        `after`; where it ends."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.raw[after:])
            if found:
                return after + found.end()
            if not self._read(0.5) and not re.search(pattern, self.raw[after:]):
                raise AssertionError(f"ended without {pattern!r}:\n{self.text()}")
        raise AssertionError(f"no {pattern!r} within {timeout}s:\n{self.text()}")

    def see(self, text: str, *, timeout: float = 60) -> None:
        """Read until `text` is on the screen (AssertionError with the screen if never)."""
        self.see_that(lambda lines: text in "\n".join(lines), text, timeout=timeout)

    def see_that(
        self, seen: Callable[[list[str]], bool], what: str, *, timeout: float = 60
    ) -> None:
        """Read until the screen's lines are `seen` (AssertionError naming `what` if
        never)."""
        deadline = time.monotonic() + timeout
        while not seen(self.lines()):
            if time.monotonic() > deadline or not self._read(0.2):
                raise AssertionError(f"{what!r} is not on the screen:\n{self.text()}")

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def resize(self, cols: int, rows: int) -> None:
        """The terminal's new size (the kernel sends the program SIGWINCH), and the
        screen's."""
        self.screen.resize(rows, cols)
        self._size(self.master, cols, rows)

    def finish(self, timeout: float = 90) -> int:
        """Read to the program's end; its exit code."""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and self._read(0.5):
                if self.proc.poll() is not None and not select.select([self.master], [], [], 0)[0]:
                    break
            return self.proc.wait(timeout=30)
        finally:
            self.close()

    def close(self) -> None:
        """The program killed if it still runs, the terminal closed (once)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.master >= 0:
            os.close(self.master)
            self.master = -1

    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    def text(self) -> str:
        return "\n".join(self.lines()).rstrip("\n") + "\n"


class _Answering(pyte.Screen):  # type: ignore[misc]
    """pyte's screen, answering a cursor position request (`ESC [6n`) as a terminal does."""

    def __init__(self, cols: int, rows: int, master: int) -> None:
        super().__init__(cols, rows)
        self._master = master

    def write_process_input(self, data: str) -> None:
        os.write(self._master, data.encode())


def masked(text: str, tmp: Path) -> str:
    """`text` with what changes from run to run named instead: the temporary directory,
    session ids, durations measured by the session (not the view's clock)."""
    text = text.replace(str(tmp), "<tmp>")
    return re.sub(r"\b\d{8}T\d{6}-[0-9a-f]{6}\b", "<session>", text)
