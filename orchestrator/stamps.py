"""What says a file changed: its stat as a tuple to compare (`stamp_of`), and whether
stamps are old enough to trust (`settled`): a file changed within the last `RACY_NS` may
change again without its stat showing it, where times are coarse. The caches of what is
read from files (a worker's scripts, hooks and git ignores) keep a value only while its
files' stamps are unchanged, and only once they are settled. Imports nothing of the
package: every floor may use it."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

RACY_NS = 2_000_000_000  # a file changed this recently (ns) may change again unseen


def stamp_of(path: str | os.PathLike[str]) -> tuple[int, ...]:
    """The file's device, inode, size and times; () when it is not there."""
    try:
        info = os.stat(path)
    except OSError:
        return ()
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def settled(stamps: Iterable[tuple[int, ...]]) -> bool:
    """Whether none of the files (those there) changed within the last `RACY_NS`."""
    now = time.time_ns()
    return all(now - max(stamp[-2:]) > RACY_NS for stamp in stamps if stamp)
