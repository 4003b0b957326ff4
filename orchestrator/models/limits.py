"""How much an endpoint is asked at once: the rate limit one call was told, held for every
call to the same endpoint and key, and how many calls may run on it at once, lowered
after a 429 or 529 and raised back as calls go well (`Backoff`). models/http.py's
`retrying` waits on it before each attempt."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

CONCURRENCY = 16
"""The most calls at once on one endpoint, by default (`[providers.NAME] concurrency`)."""
GROW_AFTER = 10
"""Calls that end well, in a row, before an endpoint's lowered concurrency grows by one."""


@dataclass
class _Lane:
    """One endpoint's calls: how many may run at once now (`limit`, at most `ceiling`),
    how many do, the calls waiting for a place, and the calm since the last change."""

    ceiling: int
    limit: int
    active: int = 0
    calm: int = 0
    waiting: deque[trio.Event] = field(default_factory=deque)


class Backoff:
    """A rate limit shared by every call to the same endpoint with the same key: once a
    provider answers one call "too many requests, wait N s", every other call of the
    session to it (other agents, other roles) waits too, instead of each learning it
    with a 429 of its own. Keys are hashes of the endpoint and its credentials.

    It also keeps how many calls run at once on each endpoint (additive increase,
    multiplicative decrease, as TCP does): a 429 or 529 halves the number of calls the
    endpoint may take at once (never below 1), and every `GROW_AFTER` calls that end well in a
    row add one back, up to the ceiling the call gives (`HttpOptions.concurrency`). A
    call waits for a place before it is sent (`enter`), and gives it back when its
    stream ends (`leave`)."""

    def __init__(self, clock: Callable[[], float] = trio.current_time) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}
        self._lanes: dict[str, _Lane] = {}

    def hold(self, key: str, seconds: float) -> None:
        """Calls with `key` wait until `seconds` from now (a longer hold is kept)."""
        until = self._clock() + seconds
        if until > self._until.get(key, 0.0):
            self._until[key] = until

    def remaining(self, key: str) -> float:
        return max(0.0, self._until.get(key, 0.0) - self._clock())

    def full(self, key: str) -> bool:
        """Whether a call on `key` would wait for a place now."""
        lane = self._lanes.get(key)
        return lane is not None and lane.active >= lane.limit

    def limit(self, key: str) -> int | None:
        """How many calls may run at once on `key` now (None: none ran yet)."""
        lane = self._lanes.get(key)
        return None if lane is None else lane.limit

    async def enter(self, key: str, ceiling: int) -> None:
        """Wait for a place among the calls running on `key`, and take it."""
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane(ceiling=ceiling, limit=ceiling)
        while lane.active >= lane.limit:
            turn = trio.Event()
            lane.waiting.append(turn)
            try:
                await turn.wait()
            except BaseException:
                if turn in lane.waiting:
                    lane.waiting.remove(turn)
                elif turn.is_set():
                    self._wake(lane)  # (its place goes to the next one)
                raise
        lane.active += 1

    def leave(self, key: str, *, limited: bool = False, ok: bool = False) -> None:
        """Give the place back: the call was `limited` (a 429 or 529: the concurrency
        halves), ended `ok` (one more calm call), or neither (changes nothing)."""
        lane = self._lanes[key]
        lane.active -= 1
        if limited:
            lane.limit = max(1, lane.limit // 2)
            lane.calm = 0
        elif ok:
            lane.calm += 1
            if lane.calm >= GROW_AFTER and lane.limit < lane.ceiling:
                lane.limit += 1
                lane.calm = 0
        self._wake(lane)

    def _wake(self, lane: _Lane) -> None:
        free = lane.limit - lane.active
        while free > 0 and lane.waiting:
            lane.waiting.popleft().set()
            free -= 1
