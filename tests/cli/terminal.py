"""A pseudo-terminal driven as a person drives one: the real command line on it, its
output fed to pyte (which answers the cursor position requests a terminal answers),
text waited for on the screen, keys typed, the window resized."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

import pyte


class Terminal:
    def __init__(
        self, args: list[str], *, cols: int = 100, rows: int = 30, cwd: Path | None = None
    ) -> None:
        self.master, slave = pty.openpty()
        self._size(slave, cols, rows)
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "ORCHESTRATOR_PLAIN")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env, "TERM": "xterm-256color"},
            cwd=cwd,
            start_new_session=True,  # the terminal is its controlling one: Ctrl+C is a key
        )
        os.close(slave)
        master = self.master

        class Answering(pyte.Screen):  # type: ignore[misc]
            def write_process_input(self, data: str) -> None:
                os.write(master, data.encode())

        self.screen = Answering(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = b""

    @staticmethod
    def _size(fd: int, cols: int, rows: int) -> None:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    def text(self) -> str:
        return "\n".join(self.lines())

    def _pump(self, timeout: float) -> bool | None:
        """Read what is there (True), nothing came (False), the terminal closed (None)."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: every other end is closed
            return None
        if not chunk:
            return None
        self.raw += chunk
        self.stream.feed(chunk)
        return True

    def wait_for(self, text: str, *, timeout: float = 60) -> None:
        """Until `text` is on the screen (AssertionError with the screen if it never is)."""
        self.wait_until(lambda lines: text in "\n".join(lines), text, timeout=timeout)

    def wait_until(
        self, seen: Callable[[list[str]], bool], what: str, *, timeout: float = 60
    ) -> None:
        """Until the screen's lines are `seen` (AssertionError naming `what` if never)."""
        deadline = time.monotonic() + timeout
        while not seen(self.lines()):
            if time.monotonic() > deadline or self._pump(0.2) is None:
                raise AssertionError(f"{what!r} is not on the screen:\n{self.text()}")

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def resize(self, cols: int, rows: int) -> None:
        self._size(self.master, cols, rows)
        self.screen.resize(rows, cols)
        self.proc.send_signal(signal.SIGWINCH)

    def wait_exit(self, *, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._pump(0.2)
        while self._pump(0.1):
            pass
        return self.proc.wait(timeout=5)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
