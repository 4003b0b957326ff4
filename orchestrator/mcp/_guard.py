"""The guard of a stdio MCP server (docs/mcp.md, "Server processes"): run as a script,
`python -I -S _guard.py COMMAND ARGS...`, in place of the server's command. It starts the
server as its child, which inherits its stdin, stdout and stderr and its process group
(the SDK starts the guard in a session and group of its own), and watches two things:

- the server's end: the guard exits too, and first kills what the server left in the
  group (a helper it started and did not stop);
- the session's end of the server's stdin pipe: when the session closes it (it stops
  the server) or dies (a SIGKILL included: the kernel closes a dead process's files),
  the pipe hangs up. The server has a moment to exit on its own, then the whole group
  is killed.

So no server, nor anything it started in its group, outlives the session. Standard
library only, nothing of the package imported: it costs one interpreter's start.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

GRACE = 1.0
"""Seconds a server has to exit after its stdin hangs up, before its group is killed
(under the SDK's own 2 s, after which it kills the group itself)."""


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write("usage: _guard.py COMMAND [ARGS...]\n")
        return 2
    if os.getpgrp() != os.getpid():
        os.setpgid(0, 0)  # a group of its own, whoever started it: it kills that group
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # (wakes the poll below)
    child = os.fork()
    if child == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.close(wake_read)
        os.close(wake_write)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            sys.stderr.write(f"cannot run {argv[0]}: {exc.strerror}\n")
            sys.stderr.flush()
        os._exit(127)
    os.close(1)  # the server's stdout is its own: the session reads its end, not ours
    watch = select.poll()
    watch.register(0, 0)  # no events asked: a hang-up is always told, data never read
    watch.register(wake_read, select.POLLIN)
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            _kill_group()
            return os.waitstatus_to_exitcode(status)
        for fd, _event in watch.poll():
            if fd == wake_read:
                os.read(wake_read, 512)
            else:  # the session's end of stdin closed, or the session died
                _wait(child, GRACE)
                _kill_group()
                return 0


def _wait(child: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.waitpid(child, os.WNOHANG)[0]:
            return
        time.sleep(0.02)


def _kill_group() -> None:
    """SIGKILL to the group: what the server left, and the guard itself last."""
    os.killpg(os.getpgrp(), signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
