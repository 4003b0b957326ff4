"""What a team is given: how far delegation may go (`Limits`) and what every agent's
turns share (`TeamSettings`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from orchestrator.models.base import Model
from orchestrator.state.mailbox import Caps
from orchestrator.team.definitions import Definitions
from orchestrator.team.oversight import Policy
from orchestrator.tools.base import ToolRegistry
from orchestrator.tools.permissions import Approver, PermissionPolicy, approve_all
from orchestrator.tools.workspace import Workspace


@dataclass(frozen=True)
class Limits:
    """How far delegation may go. `max_live` subagents run at once (more wait, pending);
    `max_model_calls` model calls run at once across the session."""

    max_depth: int = 2
    max_live: int = 8
    max_model_calls: int = 16
    wait_timeout: float = 600.0  # the longest a wait_tasks call may block
    stall_after: float = 900.0  # no word from a running task this long: reported stalled
    caps: Caps = field(default_factory=Caps)


@dataclass
class TeamSettings:
    """What every agent's turns share."""

    models: Callable[[str], Model]  # the model for a role ("main", "worker", ...)
    base_tools: ToolRegistry  # the workspace tools; each role gets its subset
    workspace: Workspace
    session_id: str = ""
    definitions: Definitions = field(default_factory=Definitions.builtin)
    limits: Limits = field(default_factory=Limits)
    policy: PermissionPolicy = field(default_factory=PermissionPolicy)
    approve: Approver = approve_all
    # Names the agent asking (the terminal shows whose call it is), else `approve` is used.
    approve_for: Callable[[str, str], Approver] | None = None
    max_rounds: int = 50
    max_tokens: int | None = None
    temperature: float | None = None
    redact: Callable[[str], str] = str
    # Asks the person whether to revive a task whose resume policy is `ask` (None: no one
    # to ask, such a task stays stopped until its owner writes to it).
    ask_resume: Callable[[str], Awaitable[bool]] | None = None
    # Assessment after each turn: continuations, verification, session budgets, serial.
    assess: Policy = field(default_factory=Policy)
