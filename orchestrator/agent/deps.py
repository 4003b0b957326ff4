"""What a turn needs (`TurnDeps`), what the multi-agent layer adds to its rounds
(`RoundHooks`), and the person's hooks around each tool call (`ToolHooks`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

import msgspec
import trio
from pydantic import BaseModel

from orchestrator.errors import ContextTooLong
from orchestrator.messages import ToolCall, ToolResult
from orchestrator.models.base import Model
from orchestrator.state.context import AgentContext
from orchestrator.state.events import Event, EventSink
from orchestrator.tools.base import AnyTool, ToolContext, ToolRegistry
from orchestrator.tools.permissions import (
    Answer,
    Approver,
    GrantLike,
    PermissionPolicy,
    approve_all,
)


class RoundHooks(Protocol):
    """What the multi-agent layer adds to a turn (see team/rounds.py): mail delivered at
    round boundaries, budgets that stop a turn, a model call an `interrupt` may cancel."""

    async def before_round(self, context: AgentContext) -> str | None:
        """Runs before each model call, with no call of the agent open. Returns why the
        turn must stop now (a spent budget), or None to go on."""
        ...

    def model_call(self, agent: str) -> AbstractContextManager[trio.CancelScope]:
        """The scope a model call runs in; cancelling it preempts that call."""
        ...

    def repeating(self, agent: str) -> bool:
        """Whether the agent makes the same call again and again: its turn ends, for the
        assessment to stop it."""
        ...

    def tool_call(self, agent: str) -> AbstractContextManager[trio.CancelScope]:
        """The scope an interruptible tool call runs in; an interrupt cancels it."""
        ...

    async def too_long(self, context: AgentContext, error: ContextTooLong) -> None:
        """The provider refused the agent's request as too long: compact its context
        (raises `CompactionFailed` when that cannot make it fit)."""
        ...


class HookVerdict(msgspec.Struct, frozen=True):
    """What the `pre_tool` hooks decided of a call: refused with the reason the model
    reads, run with other arguments (JSON, checked again like the model's own), asked
    about whatever the rules say; the default changes nothing."""

    refused: str = ""
    arguments: str | None = None
    ask: bool = False


class ToolHooks(Protocol):
    """The person's hooks around each tool call (team/hooks.py, docs/hooks.md). Each
    decision that changes something is journaled before it acts, and a call asked about
    again after a restart gets the journaled decision, not a new one."""

    async def before(self, agent: str, ref: str, call: ToolCall) -> HookVerdict:
        """The `pre_tool` hooks' verdict on `agent`'s parsed call `ref`."""
        ...

    async def after(self, agent: str, ref: str, call: ToolCall, result: ToolResult) -> str:
        """The `post_tool` hooks' note for the model on the call's result ("": none)."""
        ...


Checkpoint = Callable[[str, str, ToolCall, AnyTool | None, ToolResult], Awaitable[Event | None]]
"""Takes a workspace checkpoint after a call (session/checkpoints.py)."""


@dataclass
class TurnDeps:
    """What a turn needs. `events` must fold what it is given into the agent's context
    (a session, possibly fanned out to a screen after it)."""

    model: Model
    tools: ToolRegistry
    context: ToolContext
    events: EventSink
    policy: PermissionPolicy = field(default_factory=PermissionPolicy)
    approve: Approver = approve_all
    grants: Callable[[], Sequence[GrantLike]] = tuple  # the session's grants, as folded
    # Deferred approvals (state/approvals.py): whether this agent's calls may park when
    # the approver answers `Later` (else `Later` is taken as `Unasked`), and the answer
    # the journal holds for the call of a ref: the person's decision, `Later` while it
    # is parked undecided, None when it never parked.
    parks: bool = False
    journaled: Callable[[str], Answer | None] = lambda ref: None
    max_rounds: int = 50
    max_tokens: int | None = None
    temperature: float | None = None
    hooks: RoundHooks | None = None
    # Refuses a parsed call before it runs (a write outside the agent's write scope):
    # the reason the model should see, or None to let it run.
    guard: Callable[[ToolCall, BaseModel], Awaitable[str | None]] | None = None
    # The person's hooks before and after each call (None: none).
    tool_hooks: ToolHooks | None = None
    # Whether the turn's end waits for the disk. The main agent's does: its last reply is
    # what a person reads and acts on once the turn ends. A subagent's need not: nothing
    # outside the journal acts on it (session-format.md, write-ahead rule 3).
    durable_turn_end: bool = True
    # The usable input of the model's window, for the `usage` event (0: not known).
    usable: Callable[[], int] = int
    # What each request says after the context, for that request only (its agent's
    # calls running in the background): "" for nothing.
    note: Callable[[str], str] = lambda agent: ""
    # Workspace checkpoints (session/checkpoints.py): given the agent, the call's ref,
    # the call, its tool (None: unknown) and its result, the record to journal just
    # before the result (None: no checkpoint, nothing changed). None: none are taken.
    checkpoint: Checkpoint | None = None
