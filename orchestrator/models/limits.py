"""How much an endpoint is asked at once: the rate limit one call was told, held for every
call to the same endpoint and key, how many calls may run on it at once, lowered after a
429 or 529 and raised back as calls go well, and how many requests and tokens a minute
each model on it is sent, as the config allows (`Backoff`). models/retrying.py's `retrying`
waits on it before each attempt."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
import trio

from orchestrator.messages import Usage

CONCURRENCY = 16
"""The most calls at once on one endpoint, by default (`[providers.NAME] concurrency`)."""
GROW_AFTER = 10
"""Calls that end well, in a row, before an endpoint's lowered concurrency grows by one."""
MINUTE = 60.0
"""The window of a `Rate`, in seconds."""
CHARS_PER_TOKEN = 4.0
"""Bytes of a request per token until the provider reports a count: loop/compaction.py's
estimate (which models/ does not import; a test keeps the two the same)."""


class Rate(msgspec.Struct, frozen=True):
    """The requests (`rpm`) and tokens (`tpm`) a minute that one model (`model`, its
    name) may be sent on one endpoint (`[limits."SPEC"]`); None: no limit."""

    model: str
    rpm: int | None = None
    tpm: int | None = None


@dataclass
class Ticket:
    """One request in its model's minute: the bytes of its body, the tokens it counts
    (estimated from those bytes until the provider reports its usage) and when it was
    sent (once `Backoff.admit` let it go)."""

    window: _Window = field(repr=False)
    rate: Rate
    size: int
    tokens: int
    at: float = 0.0

    def settle(self, usage: Usage) -> None:
        """The provider's count of the request's tokens, input and output, replaces the
        estimate; its input sets the bytes per token of the model's next estimates."""
        read = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        if read > 0:
            self.window.ratio = max(1.0, self.size / read)  # (a token is a byte or more)
        self.tokens = usage.total_tokens


class _Window(msgspec.Struct):
    """One model's requests on one endpoint in the last `MINUTE`, oldest first, and the
    bytes of a request per token that the provider's last count showed."""

    sent: deque[Ticket] = msgspec.field(default_factory=deque)
    ratio: float = CHARS_PER_TOKEN

    def wait(self, now: float, rate: Rate, tokens: int) -> float:
        """Seconds until a request of `tokens` keeps within `rate` (0: now). One that
        alone is more than `tpm` waits until the window is empty, then goes alone."""
        sent = self.sent
        while sent and sent[0].at + MINUTE <= now:
            sent.popleft()
        leaves: float | None = None  # when the newest request that must leave first was sent
        if rate.rpm is not None and len(sent) >= rate.rpm:
            leaves = sent[len(sent) - rate.rpm].at
        if rate.tpm is not None:
            excess = sum(t.tokens for t in sent) + tokens - rate.tpm
            for ticket in sent:  # the oldest, until their leaving frees enough
                if excess <= 0:
                    break
                excess -= ticket.tokens
                leaves = ticket.at if leaves is None else max(leaves, ticket.at)
        return 0.0 if leaves is None else max(0.0, leaves + MINUTE - now)


class _Lane(msgspec.Struct):
    """One endpoint's calls: how many may run at once now (`limit`, at most `ceiling`),
    how many do, the calls waiting for a place, and the calm since the last change."""

    ceiling: int
    limit: int
    active: int = 0
    calm: int = 0
    waiting: deque[trio.Event] = msgspec.field(default_factory=deque)


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
    stream ends (`leave`).

    And, for a model the config gives a `Rate`, the requests and tokens it was sent on
    the endpoint in the last minute (a sliding window): a request (`ticket`) waits
    until it fits (`admit`), counting its tokens as estimated from its size until the
    provider reports them (`Ticket.settle`)."""

    def __init__(self, clock: Callable[[], float] = trio.current_time) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}
        self._lanes: dict[str, _Lane] = {}
        self._windows: dict[tuple[str, str], _Window] = {}

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

    def ticket(self, key: str, rate: Rate, size: int) -> Ticket:
        """A request of `size` bytes to `rate.model` on `key`, its tokens estimated at
        the bytes per token the provider last showed for it."""
        window = self._windows.get((key, rate.model))
        if window is None:
            window = self._windows[key, rate.model] = _Window()
        return Ticket(window, rate, size, math.ceil(size / window.ratio))

    def admit(self, ticket: Ticket) -> float:
        """Seconds the request must wait to keep within its rate; 0: it goes, counted
        as sent now (so nothing may come between this and sending it)."""
        now = self._clock()
        wait = ticket.window.wait(now, ticket.rate, ticket.tokens)
        if wait == 0:
            ticket.at = now
            ticket.window.sent.append(ticket)
        return wait

    def _wake(self, lane: _Lane) -> None:
        free = lane.limit - lane.active
        while free > 0 and lane.waiting:
            lane.waiting.popleft().set()
            free -= 1
