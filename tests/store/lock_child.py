"""A child process for the lock tests: takes the lock, says so, and holds it until killed.

python lock_child.py LOCK_PATH
python lock_child.py LOCK_PATH --forked   # forks a child that keeps the lock's descriptor
                                          # until its stdin closes, and exits at once
"""

from __future__ import annotations

import os
import sys

from orchestrator.store import SessionLock

if __name__ == "__main__" and sys.argv[2:] == ["--forked"]:
    # As a parent killed just after a fork, before its child exec'd: the child still
    # holds the flock's open file description, the named holder is gone.
    SessionLock(sys.argv[1]).acquire()
    if os.fork() == 0:
        sys.stdin.read()
        os._exit(0)
    os.write(1, b"locked %d\n" % os.getpid())
    os._exit(0)
elif __name__ == "__main__":
    with SessionLock(sys.argv[1]):
        os.write(1, b"locked %d\n" % os.getpid())
        sys.stdin.read()  # until the parent kills us (or closes our stdin)
