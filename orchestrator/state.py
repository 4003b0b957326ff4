"""Session state as a fold over journal records, and its snapshot.

`SessionState.apply` is the only place that turns a record into state, so a live run
(which folds each record as it journals it) and a resume (which folds them again) cannot
disagree. It composes the folds of the concepts that own the records: the conversation's
in `context.py`; later the task registry's, the mailbox's and the todos'.

The snapshot holds positions, not copies: the small state (statuses, counters) and, per
agent, the seq where its live context starts. Resume loads it and folds the journal once:
records before the snapshot's seq only rebuild the contexts (`apply_context`), records
after it are folded whole (`apply`).
"""

from __future__ import annotations

from typing import Any, assert_never

from pydantic import BaseModel, Field

from orchestrator.context import AgentContext, FoldError
from orchestrator.events import (
    AgentStarted,
    AssistantReplied,
    CallResult,
    EffectStarted,
    MessageAdded,
    Record,
    SessionStatus,
    SessionStatusChanged,
    TurnEnded,
    TurnStarted,
)
from orchestrator.messages import Usage


class AgentSummary(BaseModel):
    """An agent's small state in a snapshot."""

    role: str
    start: int
    steps: int = 0
    usage: Usage = Field(default_factory=Usage)
    turn_open: bool = False


class Snapshot(BaseModel):
    """`snapshot.json`: the state as of journal record `seq`, minus the contexts."""

    seq: int
    status: SessionStatus = "running"
    agents: dict[str, AgentSummary] = Field(default_factory=dict)


class SessionState:
    """The fold of a session's journal up to `seq`."""

    def __init__(self) -> None:
        self.seq = 0
        self.status: SessionStatus = "running"
        self.agents: dict[str, AgentContext] = {}

    def agent(self, agent_id: str) -> AgentContext:
        try:
            return self.agents[agent_id]
        except KeyError:
            raise FoldError(f"no agent {agent_id!r} has started") from None

    def apply(self, seq: int, record: Record) -> None:
        """Fold one record: small state and context."""
        self.seq = seq
        match record:
            case AgentStarted(agent=agent, role=role):
                self.agents[agent] = AgentContext(id=agent, role=role, start=seq)
            case TurnStarted(agent=agent):
                self.agent(agent).turn_open = True
            case AssistantReplied(agent=agent, message=message):
                context = self.agent(agent)
                context.steps += 1
                if message.usage is not None:
                    context.usage = context.usage + message.usage
            case TurnEnded(agent=agent):
                self.agent(agent).turn_open = False
            case SessionStatusChanged(status=status):
                self.status = status
            case MessageAdded() | EffectStarted() | CallResult():
                pass
            case _:
                assert_never(record)
        self.apply_context(seq, record)

    def apply_context(self, seq: int, record: Record) -> None:
        """Fold one record into its agent's context only (resume, before the snapshot's
        seq: the small state is already the snapshot's)."""
        match record:
            case AgentStarted(agent=agent, messages=messages):
                self.agent(agent).reset(messages)
            case MessageAdded(agent=agent, message=message):
                self.agent(agent).append(message)
            case AssistantReplied(agent=agent, message=message):
                self.agent(agent).replied(seq, message)
            case EffectStarted(agent=agent, ref=ref):
                self.agent(agent).effect_started(ref)
            case CallResult(agent=agent, ref=ref, status=status, content=content):
                self.agent(agent).result(ref, status, content)
            case TurnStarted() | TurnEnded() | SessionStatusChanged():
                pass
            case _:
                assert_never(record)

    def snapshot(self) -> Snapshot:
        return Snapshot(
            seq=self.seq,
            status=self.status,
            agents={
                agent_id: AgentSummary(
                    role=a.role, start=a.start, steps=a.steps, usage=a.usage, turn_open=a.turn_open
                )
                for agent_id, a in self.agents.items()
            },
        )

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot) -> SessionState:
        """The small state of `snapshot`, with every context still to be rebuilt."""
        state = cls()
        state.seq = snapshot.seq
        state.status = snapshot.status
        for agent_id, summary in snapshot.agents.items():
            state.agents[agent_id] = AgentContext(
                id=agent_id,
                role=summary.role,
                start=summary.start,
                steps=summary.steps,
                usage=summary.usage,
                turn_open=summary.turn_open,
            )
        return state

    def context_start(self) -> int:
        """The first seq any agent's live context needs (1 with no agents yet)."""
        return min((a.start for a in self.agents.values()), default=1)

    def describe(self) -> dict[str, Any]:
        """Everything, contexts included, as plain data (for tests and `sessions show`)."""
        return {
            "seq": self.seq,
            "status": self.status,
            "agents": {
                agent_id: {
                    "role": a.role,
                    "start": a.start,
                    "steps": a.steps,
                    "usage": a.usage.model_dump(),
                    "turn_open": a.turn_open,
                    "messages": [m.model_dump(mode="json") for m in a.messages],
                    "open_calls": {ref: c.model_dump() for ref, c in a.open_calls.items()},
                    "effects": sorted(a.effects),
                }
                for agent_id, a in self.agents.items()
            },
        }
