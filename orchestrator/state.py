"""Session state as a fold over journaled events, and its snapshot form.

`SessionState.apply` is the only place that turns a journaled event into state, so a
live run (which appends the same events it applies) and a resume (which replays them)
cannot disagree.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from orchestrator.events import (
    AgentStarted,
    AssistantReplied,
    Event,
    MessageAdded,
    Notice,
    SessionStatus,
    SessionStatusChanged,
    TextStreamed,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
    UsageUpdated,
)
from orchestrator.messages import AssistantMessage, Message, ToolCall, ToolResult, Usage


class AgentRecord(BaseModel):
    """Everything about one agent that a resume needs."""

    id: str
    role: str
    messages: list[Message] = Field(default_factory=list)
    steps: int = 0
    usage: Usage = Field(default_factory=Usage)
    turn_open: bool = False
    started: dict[str, bool] = Field(
        default_factory=dict,
        description="unfinished tool calls that started: call id -> idempotent",
    )

    def pending_calls(self) -> list[ToolCall]:
        """Calls of the last assistant message that have no result yet."""
        last = next((m for m in reversed(self.messages) if isinstance(m, AssistantMessage)), None)
        if last is None:
            return []
        answered = {m.call_id for m in self.messages if isinstance(m, ToolResult)}
        return [call for call in last.tool_calls if call.id not in answered]


class SessionState(BaseModel):
    """The fold of a session's journal up to `seq`."""

    seq: int = 0
    status: SessionStatus = "running"
    agents: dict[str, AgentRecord] = Field(default_factory=dict)

    def apply(self, seq: int, event: Event) -> None:
        self.seq = seq
        match event:
            case AgentStarted(agent=agent, role=role, messages=messages):
                self.agents[agent] = AgentRecord(id=agent, role=role, messages=list(messages))
            case MessageAdded(agent=agent, message=message):
                self.agents[agent].messages.append(message)
            case TurnStarted(agent=agent):
                self.agents[agent].turn_open = True
            case AssistantReplied(agent=agent, message=message):
                record = self.agents[agent]
                record.messages.append(message)
                record.steps += 1
                if message.usage is not None:
                    record.usage = record.usage + message.usage
            case ToolCallStarted(agent=agent, call=call, idempotent=idempotent):
                self.agents[agent].started[call.id] = idempotent
            case ToolCallFinished(agent=agent, result=result):
                record = self.agents[agent]
                record.messages.append(result)
                record.started.pop(result.call_id, None)
            case TurnEnded(agent=agent):
                self.agents[agent].turn_open = False
            case SessionStatusChanged(status=status):
                self.status = status
            case TextStreamed() | UsageUpdated() | Notice():
                pass

    def snapshot(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
