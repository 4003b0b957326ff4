"""The team's `RoundHooks`: what it adds to every round of a turn. Before each model
call it stops the turn once a budget is spent (the session's, or a task's subtree's),
compacts a context grown near its window and delivers urgent mail; a request the
provider finds too long is compacted and tried again; model and tool calls run in the
postbox's interruptible scopes."""

from __future__ import annotations

import contextlib

import trio

from orchestrator.errors import ContextTooLong
from orchestrator.state.context import AgentContext
from orchestrator.state.fold import SessionState
from orchestrator.state.tasks import TaskRecord
from orchestrator.team import queries
from orchestrator.team.compactor import Compactor
from orchestrator.team.oversight import Oversight
from orchestrator.team.port import SessionLike
from orchestrator.team.postbox import Postbox


class Rounds:
    """The `RoundHooks` of every agent of one team."""

    def __init__(
        self, session: SessionLike, postbox: Postbox, oversight: Oversight, compactor: Compactor
    ) -> None:
        self._session = session
        self._postbox = postbox
        self._oversight = oversight
        self.compactor = compactor

    async def before_round(self, context: AgentContext) -> str | None:
        spent = self._oversight.budget_spent()
        state = self._session.state
        task = state.tasks.get(context.id)
        if spent is None and task is not None:
            spent = budget_spent(state, task)
        if spent is not None:
            return spent
        # Before delivery: mail that arrives meanwhile is delivered after, once, whole.
        await self.compactor.maybe(context)
        await self._postbox.deliver(context.id, at_least="urgent")
        return None

    async def too_long(self, context: AgentContext, error: ContextTooLong) -> None:
        await self.compactor.too_long(context, error)

    def model_call(self, agent: str) -> contextlib.AbstractContextManager[trio.CancelScope]:
        return self._postbox.model_call(agent)

    def tool_call(self, agent: str) -> contextlib.AbstractContextManager[trio.CancelScope]:
        return self._postbox.tool_call(agent)

    def repeating(self, agent: str) -> bool:
        return queries.repeating(self._session.state, agent)


def budget_spent(state: SessionState, task: TaskRecord) -> str | None:
    """Why a model call of `task`'s agent is refused (the budget of the task, or of a task
    above it, is spent: a task's budget covers its whole subtree), or None."""
    current: TaskRecord | None = task
    while current is not None:
        if current.round_budget or current.token_budget:
            spent = _subtree_spent(state, current, "its" if current is task else "the")
            if spent is not None:
                return spent
        current = state.tasks.get(current.owner)
    return None


def _subtree_spent(state: SessionState, task: TaskRecord, whose: str) -> str | None:
    members = [state.agents.get(t.task_id) for t in state.tasks.subtree(task.task_id)]
    contexts = [c for c in members if c is not None]
    where = "" if whose == "its" else f" of task {task.task_id}, above it,"
    steps = sum(c.steps for c in contexts)
    if task.round_budget and steps >= task.round_budget:
        return f"it used {whose} budget{where} of {task.round_budget} model calls"
    if task.token_budget:
        # Before every model call of every task: the running counters, not a Usage model.
        spent = sum(c.usage.total_tokens for c in contexts)
        if spent >= task.token_budget:
            return f"it spent {spent} of {whose} budget{where} of {task.token_budget} tokens"
    return None
