"""Where a command's lines for people go: one stream, decided once per command.

What a run prints for a person (its session id and how to resume it, the notes as it
starts, the task tree, the refused calls, the summary) goes where its transcript goes,
in order with it: standard output, or standard error when standard output is a
program's (`--json`, whose stdout carries only JSON lines) or the plan's (`plan GOAL >
plan.md`). While the live view draws, the lines go above its frame, through the
transcript (`Screen.shown`). A program's error (`error: ...`, a usage error) is not a
line for people: it goes to standard error, always (`cli/main.py`). Questions asked at
the terminal go to standard error, which is the terminal when there is one to ask at.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from orchestrator.text import label, visible


class People:
    """A command's stream of lines for people: `say` a line (made safe to show), on
    standard error when `to_stderr`, else standard output (each looked up as it is
    written, so a stream replaced since, as `main` replaces stdout, is the one used)."""

    def __init__(self, *, to_stderr: bool = False) -> None:
        self.to_stderr = to_stderr
        self._through: Callable[[str], None] | None = None

    @classmethod
    def of(cls, args: argparse.Namespace, *, plan_only: bool = False) -> People:
        """The stream of a command's `args`: stderr under `--json` and for `plan`."""
        return cls(to_stderr=bool(getattr(args, "json", False)) or plan_only)

    @property
    def stream(self) -> TextIO:
        return sys.stderr if self.to_stderr else sys.stdout

    def say(self, text: str) -> None:
        """A line (or lines) for people, its control characters shown as escapes."""
        shown = visible(text)
        if self._through is not None:
            self._through(shown)
            return
        print(shown, file=self.stream, flush=True)

    @contextmanager
    def through(self, say: Callable[[str], None]) -> Iterator[None]:
        """For the block, each line goes through `say` (the transcript, above the live
        view's frame) instead of straight to the stream."""
        before, self._through = self._through, say
        try:
            yield
        finally:
            self._through = before


def command(verb: str, session_id: str, args: argparse.Namespace | None = None) -> str:
    """`orchestrator resume ID` (`verb` is `resume`, `execute`, ...), with what the
    command `args` ran with that the next one needs and the session does not journal
    (`carried`), so that it works when pasted, unattended too."""
    return f"orchestrator {verb} {session_ref(session_id, args)}{carried(args)}"


def carried(args: argparse.Namespace | None) -> str:
    """The flags of a run that its resume needs again, for it is not journaled: `--yes`
    (tool calls answered yes; without it and a terminal they are refused) and the
    `--config` file. What the session journals (its settings: the sandbox, the network,
    `--approve`'s scope, the verification, the budgets, the engine) is not repeated."""
    if args is None:
        return ""
    flags = " --yes" if getattr(args, "yes", False) else ""
    config = getattr(args, "config", None)
    return flags + (f" --config {shlex.quote(str(config))}" if config else "")


def session_ref(session_id: str, args: argparse.Namespace | None = None) -> str:
    """The session in a command: its id, with the `--sessions-dir` the command was
    given, so that the next command finds the same session."""
    where = getattr(args, "sessions_dir", None) if args is not None else None
    extra = f" --sessions-dir {shlex.quote(str(where))}" if where else ""
    return f"{label(session_id, 80)}{extra}"


def session_line(session_id: str, root: Path, args: argparse.Namespace, *, resuming: bool) -> str:
    """A run's first line: the session, where it is kept, and how to resume it."""
    where = f"session {label(session_id, 80)} (in {label(str(root), 400)})"
    if resuming:
        return f"resuming {where}; to resume it later: {command('resume', session_id, args)}"
    return f"{where}; to resume it: {command('resume', session_id, args)}"
