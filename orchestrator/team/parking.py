"""Parked tasks that nobody answers: the main agent, waiting for its tasks, stops waiting
when a task has waited for an answer for `[team] park_limit` seconds with no progress
while nobody can give it (`queries.unanswerable`), so such a session ends `blocked`
instead of hanging.

It keeps only runtime (when it first saw each task parked as it stands), measured on
trio's clock, so tests run it on a `MockClock`.
"""

from __future__ import annotations

import math

import trio

from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import Mail
from orchestrator.team import queries


class ParkWatch:
    """When each parked, unanswerable task was first seen as it stands (its latest state
    change and the length of its context: progress resets the clock)."""

    def __init__(self, limit: float) -> None:
        self.limit = limit  # seconds; 0 for no limit
        self._seen: dict[str, tuple[tuple[int, int], float]] = {}

    def look(self, state: SessionState) -> tuple[list[Mail], float]:
        """The questions of tasks parked past the limit, and when the next one will be
        (trio time; infinity when none is parked or there is no limit)."""
        if not self.limit:
            return [], math.inf
        now = trio.current_time()
        questions = queries.unanswerable(state, main_idle=True)
        seen: dict[str, tuple[tuple[int, int], float]] = {}
        over, deadline = [], math.inf
        for mail in questions:
            task = state.tasks.get(mail.sender)
            context = state.agents.get(mail.sender)
            if task is None or mail.sender in seen:
                continue
            mark = (task.changed_seq, len(context.messages) if context else 0)
            before = self._seen.get(mail.sender)
            since = before[1] if before is not None and before[0] == mark else now
            seen[mail.sender] = (mark, since)
            if now - since >= self.limit:
                over.append(mail)
            deadline = min(deadline, since + self.limit)
        self._seen = seen
        return over, deadline
