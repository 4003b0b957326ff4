"""The real command line with a fault at one chosen instant, for the crash tests.

    python -m tests.crash.fault_child FAULT SESSIONS_ROOT orchestrator-args...

FAULT is one of:

- `kill-before:NAME:STATUS`: SIGKILL this process when the file NAME (`session.json`,
  `snapshot.json`) is about to be replaced by its new version, written in full to its
  temporary file, whose status is STATUS (`*`: any): the journal already holds what the
  new version says; the manifest does not yet, and the temporary file stays behind.
- `full-after-journal:N`: the disk is full once the journal holds N bytes: the write
  that crosses N is cut short there (mid-batch), and every later write under
  SESSIONS_ROOT fails with ENOSPC.
- `full-at-manifest:SEQ`: the disk is full from the first manifest written with a
  `journal_seq` of SEQ or more: that write and every later one fail with ENOSPC.

The faults patch `os.write` and `os.replace`, which the store's writers call, at the
level of the operating system: the code under test runs unchanged.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from pathlib import Path

import orjson

from orchestrator.cli import main


def _path_of(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def kill_before(name: str, status: str) -> None:
    replace = os.replace

    def replacing(src: os.PathLike[str] | str, dst: os.PathLike[str] | str) -> None:
        if Path(dst).name == name:
            written = orjson.loads(Path(src).read_bytes())
            if status in ("*", written.get("status")):
                os.kill(os.getpid(), signal.SIGKILL)
        replace(src, dst)

    os.replace = replacing  # type: ignore[assignment]


def disk_full(root: Path, *, journal_bytes: int | None, manifest_seq: int | None) -> None:
    write = os.write
    state = {"journal": 0, "full": False}
    prefix = str(root.resolve()) + os.sep

    def full() -> OSError:
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def writing(fd: int, data: bytes | memoryview) -> int:
        path = _path_of(fd)
        if not path.startswith(prefix):
            return write(fd, data)
        if state["full"]:
            raise full()
        if journal_bytes is not None and path.endswith("/journal.jsonl"):
            room = journal_bytes - state["journal"]
            if len(data) >= room:
                state["full"] = True
                if room <= 0:
                    raise full()
                data = bytes(data)[:room]  # a short write: the rest never fits
            state["journal"] += len(data)
        if manifest_seq is not None and Path(path).name.startswith(".session.json."):
            seq = orjson.loads(bytes(data)).get("journal_seq", 0)
            if seq >= manifest_seq:
                state["full"] = True
                raise full()
        return write(fd, data)

    os.write = writing


def install(fault: str, root: Path) -> None:
    kind, _, rest = fault.partition(":")
    match kind:
        case "kill-before":
            name, _, status = rest.partition(":")
            kill_before(name, status)
        case "full-after-journal":
            disk_full(root, journal_bytes=int(rest), manifest_seq=None)
        case "full-at-manifest":
            disk_full(root, journal_bytes=None, manifest_seq=int(rest))
        case _:
            raise SystemExit(f"unknown fault {fault!r}")


if __name__ == "__main__":
    fault, root, *args = sys.argv[1:]
    install(fault, Path(root))
    sys.exit(main([*args, "--sessions-dir", root]))
