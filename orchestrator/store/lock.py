"""One live process per session: an exclusive `flock` on the session's `lock` file.

```python
with SessionLock(directory / "lock"):
    ...  # this process alone writes the session
```

`acquire` takes `flock(LOCK_EX | LOCK_NB)` and then writes who holds it (pid, host, since)
into the file, as one JSON line. A second acquirer, in another process or this one, fails
at once with `SessionLocked` naming that holder. The kernel drops an flock when its holder
dies, however it dies, so a lock left by a killed process is simply free: nothing is stale,
and nothing is ever broken by hand. The file itself stays (removing it would let two
processes lock two different files of the same name); releasing empties it.

The descriptor is close-on-exec, so a child process (a shell tool's command) does not
inherit the lock and keep it after we exit. A child forked a moment before its parent was
killed holds it until it execs (on a loaded machine, that moment can last): a lock whose
named holder is a process of this host that no longer runs is waited for, up to `wait`
seconds (5 by default), before it counts as held. `flock` is advisory and local: it does not
protect a session directory on a network file system shared by two machines.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, final

import msgspec
import orjson

from orchestrator.errors import SessionLocked


class LockHolder(msgspec.Struct, frozen=True):
    """Who holds a session lock, as its lock file says. All None for a holder that has
    taken the lock but not yet written its name (a moment's window)."""

    pid: int | None
    host: str | None
    since: datetime | None

    def describe(self) -> str:
        if self.pid is None or self.since is None:
            return "another process (not yet named in the lock file)"
        return f"pid {self.pid}@{self.host} since {self.since:%Y-%m-%d %H:%M:%S} UTC"

    @classmethod
    def parse(cls, data: bytes) -> LockHolder:
        """The holder a lock file's contents name; the unnamed holder if they name none."""
        try:
            raw: Any = orjson.loads(data)
            since = datetime.fromisoformat(raw["since"])
            return cls(int(raw["pid"]), str(raw["host"]), since)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return cls(None, None, None)


def _utc_now() -> datetime:
    return datetime.now(UTC)


@final
class SessionLock:
    """The lock on one session; `path` is its lock file (created if missing)."""

    def __init__(
        self,
        path: os.PathLike[str] | str,
        *,
        now: Callable[[], datetime] = _utc_now,
        wait: float = 5.0,
    ) -> None:
        self._path = Path(path)
        self._now = now
        self._wait = wait  # for a lock whose named holder has died (module docstring)
        self._fd: int | None = None

    @property
    def path(self) -> Path:
        return self._path

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> LockHolder:
        """Take the lock and record this process as its holder; raise `SessionLocked`
        naming the current holder if another holds it."""
        if self._fd is not None:
            raise RuntimeError(f"{self._path} is already held by this SessionLock")
        import socket  # here, not above: reading a lock (sessions list, show) never needs it

        fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + self._wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = LockHolder.parse(os.pread(fd, 4096, 0))
                if _gone(holder, socket.gethostname()) and time.monotonic() < deadline:
                    time.sleep(0.02)  # its forked child is about to exec (or exit)
                    continue
                os.close(fd)
                raise _locked_error(self._path, holder) from None
            except BaseException:
                os.close(fd)
                raise

        pid, host, since = os.getpid(), socket.gethostname(), self._now().astimezone(UTC)
        try:
            os.ftruncate(fd, 0)
            record = {"pid": pid, "host": host, "since": since.isoformat()}
            os.pwrite(fd, orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return LockHolder(pid, host, since)

    def release(self) -> None:
        """Empty the lock file and let go of the lock; a no-op when not held."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)  # closing the last descriptor releases the flock

    def __enter__(self) -> SessionLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def lock_holder(path: os.PathLike[str] | str) -> LockHolder | None:
    """Who holds the lock at `path` now; None when it is free (or has no file).

    It probes with a shared flock, held for a moment: an `acquire` elsewhere in that very
    moment fails as if the lock were held. Good for showing status, not for deciding."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return LockHolder.parse(os.pread(fd, 4096, 0))
        return None
    finally:
        os.close(fd)


def _gone(holder: LockHolder, host: str) -> bool:
    """Whether the lock's named holder is a process of this host that no longer runs."""
    if holder.pid is None or holder.host != host:
        return False
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _locked_error(path: Path, holder: LockHolder) -> SessionLocked:
    session = path.parent
    return SessionLocked(
        f"session {session} is in use by {holder.describe()} (lock file {path})",
        path=path,
        pid=holder.pid,
        host=holder.host,
        since=holder.since,
    )
