"""The dbos engine's patience with its database: calls that wait while it is unreachable.

`Patience.call(fn, *args)` runs a sync DBOS (or SQLAlchemy) call in a worker thread and
tries it again, with exponential backoff (`FIRST_WAIT` doubling to `MAX_WAIT`), for as
long as it fails with an error that means "the database cannot be reached"
(`unreachable`); any other error is raised at once. The first failure of an outage is
told once (`EngineWaiting`, through `tell`), and the first success after it
(`EngineBack`). Past `seconds` from the outage's start, the call raises
`EngineUnreachable`.

DBOS 3.4 mostly waits by itself: its system database's operations (listing, starting,
resuming workflows, recording a step's output) block and retry a lost connection
without end, logging a warning each time (`dbos._sys_db.db_retry`); only its launch
raises. So `watch_dbos` turns those warnings into the same outage, and a call blocked in
DBOS is abandoned (its thread left to DBOS) when the patience runs out. Every call in
flight is bounded by one deadline, the outage's start plus `seconds`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import re
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import trio

from orchestrator.errors import OrchestratorError
from orchestrator.state.events import EngineBack, EngineWaiting, Notice

T = TypeVar("T")

FIRST_WAIT = 0.5  # seconds before the second attempt
MAX_WAIT = 15.0  # the longest wait between two attempts
PATIENCE = 600.0  # seconds an outage is waited for (`[engine] patience`)
ENGINE = "engine"  # the `agent` of the engine's notices
DBOS_WAITING = "Database connection failed: "  # how DBOS's db_retry says it waits,
DBOS_NEXT = re.compile(r"Retrying in ([0-9.]+)s \(attempt ([0-9]+)\)$")  # and how long


class EngineUnreachable(OrchestratorError):
    """The engine's database stayed unreachable longer than the engine's patience."""


def unreachable(error: BaseException) -> bool:
    """Whether `error` (or an error it was raised from, as DBOS's wrappers are) means the
    database cannot be reached now: a lost or refused connection, the server shutting
    down or out of connections, a pool with no connection to give, SQLite locked."""
    from sqlalchemy import exc

    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, exc.DBAPIError):
            if seen.connection_invalidated or isinstance(seen, exc.InterfaceError):
                return True
            if isinstance(seen, exc.OperationalError) and _connection_lost(seen.orig):
                return True
        elif isinstance(seen, exc.TimeoutError):
            return True  # no connection came out of the pool in time
        seen = seen.__cause__ or seen.__context__
    return False


def _connection_lost(driver_error: BaseException | None) -> bool:
    state = getattr(driver_error, "sqlstate", None)
    if state:  # Postgres: connection exception, insufficient resources, shutting down
        return str(state).startswith(("08", "53", "57P"))
    if type(driver_error).__module__.startswith("psycopg"):
        return True  # no state: the connection itself failed (refused, closed)
    return "database is locked" in str(driver_error)


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class Patience:
    """The calls of one engine (a session's runner, a worker) to its database, and the
    outage they see. `tell` shows a notice to people; `run` (a task in the caller's
    nursery) sends the notices, in order."""

    def __init__(
        self,
        tell: Callable[[Notice], Awaitable[None]],
        *,
        seconds: float = PATIENCE,
        first_wait: float = FIRST_WAIT,
        max_wait: float = MAX_WAIT,
        limiter: trio.CapacityLimiter | None = None,
    ) -> None:
        self.seconds = seconds
        self._tell = tell
        self._first_wait = first_wait
        self._max_wait = max_wait
        self._limiter = limiter
        self._since: float | None = None  # the outage's start (trio's clock), or None
        self._calls: dict[trio.CancelScope, float | None] = {}  # in flight: their bound
        self._notices, self._outbox = trio.open_memory_channel[Notice](math.inf)
        self.token = trio.lowlevel.current_trio_token()

    @property
    def waiting(self) -> bool:
        """Whether an outage is under way."""
        return self._since is not None

    @property
    def gave_up(self) -> bool:
        """Whether the outage under way is older than the patience."""
        return self._since is not None and trio.current_time() >= self._since + self.seconds

    async def run(self) -> None:
        """Sends the notices, in the order the outages gave them; runs until cancelled."""
        async for notice in self._outbox:
            await self._tell(notice)

    async def flush(self) -> None:
        """Send the notices `run` has not sent yet (the engine ends: `run` is cancelled
        with it, perhaps before the notice of the outage it gives up on)."""
        while True:
            try:
                notice = self._outbox.receive_nowait()
            except trio.WouldBlock:
                return
            await self._tell(notice)

    async def call(self, fn: Callable[..., T], *args: Any, bound: float | None = None) -> T:
        """`fn(*args)` in a worker thread, tried again while the database is unreachable
        (see `retry`)."""
        work = functools.partial(fn, *args)
        return await self.retry(
            lambda: trio.to_thread.run_sync(work, limiter=self._limiter, abandon_on_cancel=True),
            bound=bound,
        )

    async def retry(self, attempt: Callable[[], Awaitable[T]], *, bound: float | None = None) -> T:
        """`attempt()`'s result, tried again after each failure that `unreachable` says
        is an outage; `EngineUnreachable` once the outage is older than the patience.
        `bound`: seconds to wait for one attempt while the database answers
        (`trio.TooSlowError` past them); an outage suspends it."""
        failures = 0
        while True:
            with trio.CancelScope(deadline=self._deadline(bound)) as scope:
                self._calls[scope] = bound
                try:
                    result = await attempt()
                except Exception as error:
                    if not unreachable(error):
                        raise
                    failed: BaseException = error
                else:
                    self.reached()
                    return result
                finally:
                    del self._calls[scope]
            if scope.cancelled_caught:
                if self._since is None:
                    raise trio.TooSlowError
                raise self._gave_up(None)
            failures += 1
            wait = min(self._first_wait * 2 ** (failures - 1), self._max_wait)
            self.lost(first_line(failed), failures, wait)
            give_up = self._deadline(None)
            if trio.current_time() >= give_up:
                raise self._gave_up(failed)
            await trio.sleep_until(min(trio.current_time() + wait, give_up))

    def lost(self, error: str, attempt: int, wait: float) -> None:
        """A failure to reach the database (one of ours, or one DBOS logged): the start
        of an outage, told once, unless one is under way. On the trio thread."""
        if self._since is not None:
            return
        self._since = trio.current_time()
        for scope in self._calls:  # every call in flight waits as long as the outage may
            scope.deadline = self._deadline(None)
        message = f"the engine's database is unreachable ({error}); trying again in {wait:g}s"
        self._say(
            EngineWaiting(agent=ENGINE, message=message, error=error, attempt=attempt, wait=wait)
        )

    def reached(self) -> None:
        """A call went through: an outage under way is over, and told so."""
        if self._since is None:
            return
        waited = trio.current_time() - self._since
        self._since = None
        for scope, bound in self._calls.items():
            scope.deadline = self._deadline(bound)
        message = f"the engine's database answers again (after {waited:.1f}s)"
        self._say(EngineBack(agent=ENGINE, message=message, waited=round(waited, 1)))

    @contextlib.contextmanager
    def watch_dbos(self) -> Iterator[None]:
        """Within: DBOS's own waits for its database (its warnings) are this outage, and
        told as its notices instead (DBOS warns at each attempt, on stderr)."""
        waits = _DbosWaits(self)
        logger = logging.getLogger("dbos")
        logger.addFilter(waits)
        try:
            yield
        finally:
            logger.removeFilter(waits)

    def _deadline(self, bound: float | None) -> float:
        if self._since is not None:
            return self._since + self.seconds
        return math.inf if bound is None else trio.current_time() + bound

    def _gave_up(self, error: BaseException | None) -> EngineUnreachable:
        why = f": {first_line(error)}" if error is not None else ""
        return EngineUnreachable(
            f"the engine's database was unreachable for {self.seconds:g}s (the engine's "
            f"patience, [engine] patience){why}; the session can be resumed once it answers"
        )

    def _say(self, notice: Notice) -> None:
        self._notices.send_nowait(notice)


class _DbosWaits(logging.Filter):
    """DBOS's warnings that it waits for its database, taken out of its log and given to
    `Patience.lost` on trio's thread (they come from DBOS's threads)."""

    def __init__(self, patience: Patience) -> None:
        super().__init__()
        self._patience = patience

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if not text.startswith(DBOS_WAITING):
            return True
        error = text.removeprefix(DBOS_WAITING).splitlines()[0]
        then = DBOS_NEXT.search(text)
        wait, attempt = (float(then[1]), int(then[2])) if then else (0.0, 1)
        with contextlib.suppress(trio.RunFinishedError):
            self._patience.token.run_sync_soon(self._patience.lost, error, attempt, wait)
        return False
