"""The two file-system calls durability rests on: syncing a file's data and a directory.

Everything here blocks; callers on the trio loop run it in a worker thread.
"""

from __future__ import annotations

import os
from pathlib import Path

# fdatasync skips metadata the data does not need (mtime); an append's new size is still
# synced. Where it is missing (macOS), fsync. Note that macOS's fsync does not flush the
# drive's own cache: the guarantees in docs/session-format.md assume Linux.
_sync_data = getattr(os, "fdatasync", os.fsync)


def sync_data(fd: int) -> None:
    """Make the file's written data durable."""
    _sync_data(fd)


def sync_dir(directory: Path) -> None:
    """Make the directory's entries durable (a created, renamed or removed name)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """`os.write` until every byte is written (a regular file may take fewer at a time)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
