"""Bounded walks of a workspace, for `list_files` and `grep`.

Every walk stops after a number of directory entries and a time limit, never follows a
symlinked directory (no loops), skips tool caches, and yields regular files only. `grep`
runs this module as a script in a child process (`python walk.py REQUEST ROOT BASE`), so
that the call can be killed at its time limit or on cancellation whatever the regular
expression does; it therefore imports nothing from the package.

Names are the file system's, which need not be UTF-8: Python carries a byte that is not
as a lone surrogate, which JSON cannot, so the child hands each name over as the hex of
its bytes (and gets the root and the base as arguments, not in its JSON request); the
tool shows it escaped (`text.escaped`). A file that is not UTF-8 is searched all the
same, each byte that is not read as U+FFFD (as `read_file` reads it), and counted; one
that is not UTF-8 and holds a NUL byte is binary: a match in it is one line saying so.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

SKIP_DIRS = frozenset({".git", ".venv", "__pycache__", "node_modules", ".mypy_cache"})
GREP_FILE_BYTES = 8 * 1024 * 1024  # larger files are not searched
GREP_LINE_CHARS = 20_000  # longer lines are not searched


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob over workspace-relative paths: `**` crosses directories, `*` and `?` do
    not, the rest is literal. `*.py` matches top-level files only, `**/*.py` any."""
    out = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return re.compile("".join(out))


@dataclass
class Walk:
    """Where a walk stopped early, if it did (for the note the model reads)."""

    entries: int = 0
    stopped: str = ""
    files: list[tuple[Path, str]] = field(default_factory=list)


def walk_files(root: Path, base: Path, pattern: str, *, max_entries: int, seconds: float) -> Walk:
    """Regular files under `base` (a directory or a file inside `root`) whose path
    relative to `base` matches `pattern`, sorted, with their root-relative names.
    Symlinks that lead out of `root` are left out."""
    walk = Walk()
    if base.is_file():
        walk.files.append((base, base.relative_to(root).as_posix()))
        return walk
    regex = glob_regex(pattern)
    deadline = time.monotonic() + seconds
    for path, rel in _entries(base, walk, max_entries, deadline):
        if regex.fullmatch(rel) and _regular_inside(path, root):
            walk.files.append((path, path.relative_to(root).as_posix()))
    walk.files.sort(key=lambda item: item[1])
    return walk


def _entries(
    base: Path, walk: Walk, max_entries: int, deadline: float
) -> Iterator[tuple[Path, str]]:
    stack = [(base, "")]
    while stack:
        directory, prefix = stack.pop()
        try:
            with os.scandir(directory) as entries:
                listed = sorted(entries, key=lambda e: e.name)
        except OSError:
            continue  # unreadable: nothing to list there
        for entry in listed:
            walk.entries += 1
            if walk.entries > max_entries:
                walk.stopped = f"stopped after {max_entries} directory entries"
                return
            if walk.entries % 256 == 0 and time.monotonic() > deadline:
                walk.stopped = "stopped at its time limit"
                return
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS:
                    stack.append((Path(entry.path), rel + "/"))
            else:
                yield Path(entry.path), rel


def _regular_inside(path: Path, root: Path) -> bool:
    try:
        resolved = path.resolve()
        return resolved.is_relative_to(root) and stat.S_ISREG(resolved.stat().st_mode)
    except OSError:
        return False


def _read_inside(path: Path, root: Path) -> bytes | None:
    """The bytes of the regular file at `path`, None past GREP_FILE_BYTES. The file is
    checked once open (what was opened is what is read): a regular file, and, where the
    system says which file a descriptor is (Linux's /proc/self/fd), one inside `root`,
    so a symlink swapped in since the walk looked cannot lead the read elsewhere."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is not a regular file")
        try:
            opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            opened = None  # no /proc: the walk's check stands alone
        if opened is not None and not opened.is_relative_to(root):
            raise OSError(f"{path} leads outside the workspace")
        if info.st_size > GREP_FILE_BYTES:
            return None
        return file.read(GREP_FILE_BYTES + 1)


def grep(request: dict[str, object], root: Path, base: Path) -> dict[str, object]:
    """Matches of `pattern` under `base`, each `[name, line, text]` (the name as the hex of
    its bytes; line 0 for a binary file, whose text is empty), at most `cap` (one more
    says "more"); how many files were over the size limit (`skipped`) and how many were
    not UTF-8 (`replaced`)."""
    regex = re.compile(str(request["pattern"]))
    cap = int(str(request["cap"]))
    walk = walk_files(
        root,
        base,
        str(request["glob"]),
        max_entries=int(str(request["max_entries"])),
        seconds=float(str(request["seconds"])),
    )
    matches: list[tuple[str, int, str]] = []
    skipped = replaced = 0
    for path, name in walk.files:
        try:
            data = _read_inside(path, root)
        except OSError:
            continue  # unreadable: not a text match
        if data is None:
            skipped += 1
            continue
        shown = os.fsencode(name).hex()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            if "\0" in text:  # binary: whether it matches, not its lines
                if any(regex.search(line) for line in _lines(text)):
                    matches.append((shown, 0, ""))
                text = ""
            else:
                replaced += 1
        for number, line in enumerate(text.splitlines(), start=1):
            if len(line) <= GREP_LINE_CHARS and regex.search(line):
                matches.append((shown, number, line))
                if len(matches) > cap:
                    break
        if len(matches) > cap:
            break
    return {"matches": matches, "stopped": walk.stopped, "skipped": skipped, "replaced": replaced}


def _lines(text: str) -> Iterator[str]:
    return (line for line in text.splitlines() if len(line) <= GREP_LINE_CHARS)


if __name__ == "__main__":
    request = orjson.loads(sys.argv[1])
    found = grep(request, Path(sys.argv[2]), Path(sys.argv[3]))
    sys.stdout.buffer.write(orjson.dumps(found))
