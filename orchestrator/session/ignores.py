"""Which new paths `.gitignore` ignores, as git reads it, asked of one long-lived `git
check-ignore --stdin` per store instead of a process per checkpoint (what a file tool's
checkpoint in-process asks of a file the last checkpoint did not hold, session/known.py).

The process reads a directory's `.gitignore` when a path first goes under it and keeps
it while later paths stay there; so the `.gitignore` files on each path asked (and the
store's `info/exclude`) are `stat`-ed first, and one that changed, came or went since a
path was last asked under it starts a new process.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from orchestrator.stamps import stamp_of


class Ignores:
    """`git check-ignore --stdin` kept running, with the `.gitignore` files it has read."""

    def __init__(self, command: list[str], env: dict[str, str], workspace: Path, exclude: Path):
        self._command = command
        self._env = env
        self._workspace = workspace
        self._exclude = exclude
        self._process: subprocess.Popen[bytes] | None = None
        self._seen: dict[Path, tuple[int, ...]] = {}
        self._pending = b""
        self._closer: weakref.finalize[[subprocess.Popen[bytes]], Ignores] | None = None

    def ignored(self, paths: Sequence[str]) -> list[str] | None:
        """Which of `paths` are ignored; None when the process failed (ask otherwise)."""
        files = {self._exclude: stamp_of(self._exclude)}
        for path in paths:
            for folder in [self._workspace, *self._folders(path)]:
                files[folder / ".gitignore"] = stamp_of(folder / ".gitignore")
        if self._process is None or any(self._seen.get(f, s) != s for f, s in files.items()):
            self.close()
            self._start()
        self._seen.update(files)
        process = self._process
        assert process is not None
        assert process.stdin is not None
        assert process.stdout is not None
        found = []
        try:
            for path in paths:  # (one at a time: its answer read before the next is written)
                process.stdin.write(os.fsencode(path) + b"\0")
                process.stdin.flush()
                # source, line, pattern, path; a pattern `!...` matched does not ignore
                _source, _line, pattern, _path = (self._field(process.stdout) for _ in range(4))
                if pattern and not pattern.startswith(b"!"):
                    found.append(path)
        except (OSError, EOFError):
            self.close()
            return None
        return found

    def close(self) -> None:
        if self._closer is not None:
            self._closer()
        self._process = None
        self._closer = None
        self._seen.clear()
        self._pending = b""

    def _start(self) -> None:
        self._process = subprocess.Popen(
            [*self._command, "check-ignore", "--no-index", "--stdin", "-z", "-v", "-n"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=self._env,
            cwd=self._workspace,
        )
        self._closer = weakref.finalize(self, _end, self._process)

    def _field(self, stream: IO[bytes]) -> bytes:
        while b"\0" not in self._pending:
            more = os.read(stream.fileno(), 65536)
            if not more:
                raise EOFError("git check-ignore ended")
            self._pending += more
        field, _, self._pending = self._pending.partition(b"\0")
        return field

    def _folders(self, path: str) -> list[Path]:
        parts = path.split("/")[:-1]
        return [self._workspace.joinpath(*parts[: n + 1]) for n in range(len(parts))]


def _end(process: subprocess.Popen[bytes]) -> None:
    """Close its input (it ends) and wait for it."""
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
