"""What the checkpoint store (session/shadow.py) needs of git beside its commands: git
found on this machine, the object directories a store reads (its own and its
alternates'), and paths as git's NUL-separated lists."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from orchestrator.errors import SessionError


class CheckpointsUnavailable(SessionError):
    """Workspace checkpoints cannot be taken here (no `git`); everything else works."""


def available() -> bool:
    """Whether checkpoints can be taken on this machine (git is installed)."""
    return shutil.which("git") is not None


def git_command() -> str:
    found = shutil.which("git")
    if found is None:
        raise CheckpointsUnavailable("workspace checkpoints are off: git is not installed")
    return found


def object_dirs(objects: Path, depth: int = 0) -> list[Path]:
    """The object directories a store reads: its own, then its alternates' (a fork's
    parents')."""
    found = [objects]
    try:
        alternates = (objects / "info" / "alternates").read_text().splitlines()
    except OSError:
        return found
    for line in alternates:
        if line.strip() and depth < 5:
            found += object_dirs(Path(line.strip()), depth + 1)
    return found


def split(output: bytes) -> list[str]:
    return [os.fsdecode(part) for part in output.split(b"\0") if part]


def joined(paths: Sequence[str]) -> bytes:
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


def size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{n} bytes"
