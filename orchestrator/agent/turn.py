"""The turn loop shared by the main agent and every subagent: model ⇄ tools until the
model answers without calling a tool, or the round limit is hit.

Everything a turn needs arrives in `TurnDeps`. The loop reads the agent's context
(`AgentContext`) and never writes it: it emits events to `deps.events`, a session (a
`LiveSession`, or a `MemorySession` off disk) that journals each event's record and folds
it into that same context. So the context after a crash, folded from the journal, is the
context the run had, by construction.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from orchestrator.agent.calls import run_calls
from orchestrator.agent.deps import TurnDeps
from orchestrator.agent.recovery import recovered
from orchestrator.errors import CompactionFailed, ContextTooLong, ModelError
from orchestrator.messages import AssistantMessage
from orchestrator.models.base import (
    ModelChosen,
    ModelEvent,
    ModelRequest,
    TextDelta,
    Waiting,
    at_output_limit,
    collect,
)
from orchestrator.state.context import AgentContext
from orchestrator.state.events import (
    AssistantReplied,
    EventSink,
    ModelWaiting,
    ReplyCut,
    TextStreamed,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
    UsageUpdated,
)
from orchestrator.state.fallbacks import ModelSwitched


@dataclass(frozen=True)
class TurnOutcome:
    reason: TurnEndReason
    rounds: int
    final: AssistantMessage | None = None
    # Why the hooks stopped the turn before a round (a spent budget), with reason
    # `failed`; the turn is left open, for its caller to end as it acts on this.
    stopped: str = ""
    # A call of the last reply parked for a person's decision: the turn is left open
    # (its calls from the parked one on have no result), and goes on once decided.
    parked: bool = False


async def run_turn(state: AgentContext, deps: TurnDeps) -> TurnOutcome:
    """Run one turn. Model errors propagate; tool errors become results the model sees."""
    await deps.events.emit(TurnStarted(agent=state.id))
    hooks = deps.hooks
    rounds = too_long = 0
    while rounds < deps.max_rounds:
        if hooks is not None:
            stopped = await hooks.before_round(state)
            if stopped is not None:
                return TurnOutcome("failed", rounds, stopped=stopped)
        try:
            reply = await _ask_model(state, deps)
        except ContextTooLong as exc:
            # Compact and ask again; twice in a row for one round means compaction does
            # not help (each must shrink the request, or the task fails).
            too_long += 1
            if hooks is None or isinstance(exc, CompactionFailed) or too_long > 2:
                raise
            await hooks.too_long(state, exc)
            continue
        too_long = 0
        if reply is None:
            continue  # preempted by an interrupt, which the next round starts with
        rounds += 1
        if not reply.tool_calls:
            await deps.events.emit(
                TurnEnded(agent=state.id, reason="completed", rounds=rounds),
                durable=deps.durable_turn_end,
            )
            return TurnOutcome("completed", rounds, reply)
        _, ends_turn, parked = await run_calls(state, state.pending_calls(), deps)
        if parked:
            return TurnOutcome("yielded", rounds, reply, parked=True)
        if ends_turn or (hooks is not None and hooks.repeating(state.id)):
            await deps.events.emit(
                TurnEnded(agent=state.id, reason="yielded", rounds=rounds),
                durable=deps.durable_turn_end,
            )
            return TurnOutcome("yielded", rounds, reply)
    await deps.events.emit(
        TurnEnded(agent=state.id, reason="max_rounds", rounds=rounds), durable=deps.durable_turn_end
    )
    return TurnOutcome("max_rounds", rounds)


async def _ask_model(state: AgentContext, deps: TurnDeps) -> AssistantMessage | None:
    """The model's reply, journaled; None when an interrupt cancelled the call."""
    request = ModelRequest(
        messages=state.view(),
        tools=deps.tools.specs(),
        agent=state.id,
        role=state.role,
        step=state.steps,
        max_tokens=deps.max_tokens,
        temperature=deps.temperature,
        cache_key=cache_key(deps.context.session, state.role),
        note=deps.note(state.id),
    )
    scope = deps.hooks.model_call(state.id) if deps.hooks else contextlib.nullcontext()
    reply = None
    with scope as preemptible:
        reply, model = await _reply(request, state.id, deps)
        if at_output_limit(reply.stop_reason):
            reply, model = await _recovered(request, reply, model, state.id, deps)
    if reply is None:
        assert preemptible is not None
        assert preemptible.cancelled_caught
        return None
    # Write-ahead: the reply is journaled before any of its tool calls runs.
    await deps.events.emit(AssistantReplied(agent=state.id, message=reply, model=model))
    if reply.usage is not None:
        context, usable = state.count().tokens, deps.usable()
        usage = UsageUpdated(
            agent=state.id, usage=reply.usage, total=state.usage, context=context, usable=usable
        )
        await deps.events.emit(usage)
    # The reply as folded, which is what its calls run from: a sink that scrubs secrets
    # (state/scrub.py) folds a redacted copy, and the calls run redacted, as they are
    # journaled, so a call run again after a crash does what the first run did.
    folded = state.messages[-1] if state.messages else None
    return folded if isinstance(folded, AssistantMessage) else reply


@functools.lru_cache(maxsize=64)
def cache_key(session: str, role: str) -> str:
    """A provider's prompt-cache key for the agents of `role` in `session`: stable, and
    made of nothing but those two names (hashed), so it carries no secret."""
    if not session:
        return ""
    return "orch-" + hashlib.sha256(f"{session}/{role}".encode()).hexdigest()[:24]


async def _recovered(
    request: ModelRequest, reply: AssistantMessage, model: str, agent: str, deps: TurnDeps
) -> tuple[AssistantMessage, str]:
    """`reply`, which its output limit cut, recovered (agent/recovery.py), and the model
    that answered last. (Apart from `_ask_model`: a model call in flight, a thousand at
    once with as many subagents, holds no recovery of its own until its reply needs one.)"""
    asked = model

    async def ask(request: ModelRequest) -> AssistantMessage:
        nonlocal model
        reply, model = await _reply(request, agent, deps)
        return reply

    return await recovered(request, reply, ask, asked, deps.events), model


RESTARTS = 2
"""Times a reply cut after part of it arrived (a dropped connection, a stream that ends
early, an overload told mid-stream) is asked for again from its start, before the error
ends the turn. A failure before anything arrived is the wire layer's to retry."""


async def _reply(request: ModelRequest, agent: str, deps: TurnDeps) -> tuple[AssistantMessage, str]:
    """The model's reply to `request`, its text shown as it streams, and the name of the
    model that answered (a fallback chain's says which of its models, models/fallback.py,
    and a move of the chain is journaled before the reply). A reply cut after some of it
    arrived is asked for again (at most `RESTARTS` times), said with a `ReplyCut`: only
    the whole reply is journaled, what arrived of a cut one is dropped."""
    restart = 0
    while True:
        attempt = _Attempt(agent, deps.events, deps.model.name)
        try:
            async with deps.model.stream(request) as stream:
                return await collect(attempt.shown(stream)), attempt.model
        except ModelError as exc:
            if not exc.retryable or not attempt.arrived or restart >= RESTARTS:
                raise
            message = f"{agent}'s reply was cut ({exc}): asking for it again"
            await deps.events.emit(ReplyCut(agent=agent, message=message, error=str(exc)))
        restart += 1


class _Attempt:
    """One attempt at a reply: its events shown as they stream, how many reached the
    reply, and the model that answers. (A small object, not a closure over four cells:
    a thousand subagents' calls may be in flight at once.)"""

    __slots__ = ("agent", "arrived", "events", "model")

    def __init__(self, agent: str, events: EventSink, model: str) -> None:
        self.agent = agent
        self.events = events
        self.model = model  # as asked, until a fallback chain says which member answers
        self.arrived = 0  # the events of this attempt that reached the reply

    async def shown(self, stream: AsyncIterator[ModelEvent]) -> AsyncIterator[ModelEvent]:
        agent = self.agent
        async for event in stream:
            if isinstance(event, TextDelta):
                await self.events.emit(TextStreamed(agent=agent, text=event.text))
            elif isinstance(event, Waiting):
                await self.events.emit(_waiting(agent, event))
                continue
            elif isinstance(event, ModelChosen):
                self.model = event.model
                if event.instead_of:
                    await self.events.emit(_switched(agent, event))
                continue
            self.arrived += 1
            yield event


def _switched(agent: str, event: ModelChosen) -> ModelSwitched:
    return ModelSwitched(
        agent=agent,
        chain=event.chain,
        model=event.model,
        instead_of=event.instead_of,
        why=event.why,
        at=event.at,
    )


def _waiting(agent: str, event: Waiting) -> ModelWaiting:
    how_long = "until a place frees" if event.seconds is None else f"{event.seconds:.0f} s"
    message = f"{agent}'s model call waits {how_long}: {event.why}"
    return ModelWaiting(agent=agent, message=message, seconds=event.seconds, why=event.why)
