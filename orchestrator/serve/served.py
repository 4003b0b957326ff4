"""A session an `orchestrator mcp serve` process runs: its team once it runs, what it
waits for the client to decide (`Asked`), and the progress lines its waiting clients are
told (`ServedSink` makes them from its events)."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

import trio

from orchestrator.serve.views import Data, said
from orchestrator.state.events import Event
from orchestrator.team.drive import RunResult
from orchestrator.team.plan_host import PlanVerdict
from orchestrator.team.runtime import Team
from orchestrator.tools.permissions import Answer, Denied

Decision = Answer | PlanVerdict

KEPT_LINES = 1000  # progress lines a served session keeps for its waiters


@dataclass
class Asked:
    """One thing that waits for the client's decision: a tool call or a plan version."""

    id: str
    shown: Data
    answered: trio.Event = field(default_factory=trio.Event)
    answer: Decision | None = None


class Served:
    """A session this server runs: its team once it runs, what it asks, its progress."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.team: Team | None = None
        self.asked: dict[str, Asked] = {}
        self.lines: collections.deque[str] = collections.deque(maxlen=KEPT_LINES)
        self.told = 0  # progress lines ever made (the last is number `told`)
        self.reported = 0  # the last line told to a waiting client
        # The questions and decisions (ids) the client was last answered with, by a
        # status or a wait: a wait returns at once for one it has not been shown.
        self.shown: frozenset[str] = frozenset()
        self.result: RunResult | None = None
        self.error = ""
        self.running = True
        self.scope = trio.CancelScope()
        self._changed = trio.Event()

    def change(self) -> trio.Event:
        """The event set at the next change (take it before looking, then wait on it)."""
        return self._changed

    def changed(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def tell(self, line: str) -> None:
        self.lines.append(line)
        self.told += 1
        self.changed()

    def since(self, told: int) -> list[tuple[int, str]]:
        """The lines after number `told` that are still kept, numbered."""
        first = self.told - len(self.lines) + 1
        return [(first + i, line) for i, line in enumerate(self.lines) if first + i > told]

    async def attach(self, team: Team) -> None:
        self.team = team
        self.changed()


class ServedSink:
    """A served session's events, as progress lines."""

    def __init__(self, served: Served) -> None:
        self._served = served

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        line = said(event)
        if line is not None:
            self._served.tell(line)


def decision(kind: str, approve: bool, reason: str) -> Decision:
    """The client's answer to a plan (`kind` "plan") or to a call, as the session takes it."""
    if kind == "plan":
        if approve:
            return PlanVerdict("approved", by="mcp client")
        return PlanVerdict("rejected", feedback=reason, by="mcp client")
    return call_decision(approve, reason)


def call_decision(approve: bool, reason: str) -> bool | Denied:
    if approve:
        return True
    return Denied(reason) if reason else False
