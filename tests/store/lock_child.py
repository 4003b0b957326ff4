"""A child process for the lock tests: takes the lock, says so, and holds it until killed.

python lock_child.py LOCK_PATH
"""

from __future__ import annotations

import os
import sys

from orchestrator.store import SessionLock

if __name__ == "__main__":
    with SessionLock(sys.argv[1]):
        os.write(1, b"locked %d\n" % os.getpid())
        sys.stdin.read()  # until the parent kills us (or closes our stdin)
