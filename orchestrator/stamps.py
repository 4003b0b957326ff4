"""What says a file changed: its stat as a tuple to compare (`stamp_of`), and whether
stamps are old enough to trust (`settled`): a file changed within the last `RACY_NS` may
change again without its stat showing it, where times are coarse. The caches of what is
read from files (`ByStamps`: a worker's scripts, agent types and hooks) keep a value only
while its files' stamps are unchanged, and only once they are settled. Imports nothing
of the package: every floor may use it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
Stamps = tuple[tuple[int, ...], ...]

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


class ByStamps(Generic[K, T]):
    """Values made from files, each kept with the stamps its files had when it was made:
    given back while they are the same, and kept only once they are settled. At most
    `most` values are kept (the oldest goes first). A value is never None."""

    def __init__(self, most: int | None = None) -> None:
        self._kept: dict[K, tuple[Stamps, T]] = {}
        self._most = most
        self.made = 0  # how many values were made (`keep`)

    def look(self, key: K, paths: Iterable[str | os.PathLike[str]]) -> tuple[Stamps, T | None]:
        """The stamps of `paths` now, and the value kept for `key` with those stamps
        (None: none is). Stamp before making: a change while it is made shows next time."""
        stamps = tuple(stamp_of(path) for path in paths)
        found = self._kept.get(key)
        return stamps, found[1] if found is not None and found[0] == stamps else None

    def get(self, key: K, paths: Iterable[str | os.PathLike[str]], make: Callable[[], T]) -> T:
        """The value kept for `key` while `paths` are unchanged, else `make()`'s, kept."""
        stamps, found = self.look(key, paths)
        return found if found is not None else self.keep(key, stamps, make())

    def keep(self, key: K, stamps: Stamps, value: T) -> T:
        """`value`, made from files that had `stamps` (as `look` gave them), kept for
        `key` if they are settled."""
        self.made += 1
        self._kept.pop(key, None)
        if settled(stamps):
            if self._most is not None and len(self._kept) >= self._most:
                self._kept.pop(next(iter(self._kept)))
            self._kept[key] = (stamps, value)
        return value
