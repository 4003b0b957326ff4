"""What a team is given: how far delegation may go (`Limits`) and what every agent's
turns share (`TeamSettings`)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import ConfigError
from orchestrator.loop.assessment import Budgets
from orchestrator.loop.compaction import Window
from orchestrator.models.base import Model
from orchestrator.state.mailbox import Caps
from orchestrator.state.settings import SessionSettings
from orchestrator.team.asking import QuestionAnswerer
from orchestrator.team.definitions import Definitions
from orchestrator.team.oversight import Policy
from orchestrator.team.plan_host import PlanApprover
from orchestrator.team.writes import OtherTasks
from orchestrator.tools.base import ToolRegistry
from orchestrator.tools.permissions import Approver, PermissionPolicy, approve_all
from orchestrator.tools.recall import Lookup
from orchestrator.tools.workspace import Workspace
from orchestrator.usage import Price


@dataclass(frozen=True)
class Limits:
    """How far delegation may go. `max_live` subagents run at once (more wait, pending);
    `max_model_calls` model calls run at once across the session."""

    max_depth: int
    max_live: int
    max_model_calls: int
    wait_timeout: float  # the longest a wait_tasks call may block
    stall_after: float  # no word from a running task this long: reported stalled
    caps: Caps
    park_limit: float  # a parked task nobody can answer this long: session blocked (0: never)


@dataclass
class TeamSettings:
    """What every agent's turns share: the session's settings (data, journaled) and the
    wiring that is not data (models, tools, approvers)."""

    models: Callable[[str], Model]  # the model for a role ("main", "worker", ...)
    # The session's tools (the workspace tools, custom ones); each role gets its subset.
    # The tools the definitions were given as objects are added (`session_tools`).
    base_tools: ToolRegistry
    workspace: Workspace
    session_id: str = ""
    definitions: Definitions = field(default_factory=Definitions.builtin)
    policy: PermissionPolicy = field(default_factory=PermissionPolicy)
    approve: Approver = approve_all
    # Names the agent asking (the terminal shows whose call it is), else `approve` is used.
    approve_for: Callable[[str, str], Approver] | None = None
    redact: Callable[[str], str] = str
    # Asks the person whether to revive a task whose resume policy is `ask` (None: no one
    # to ask, such a task stays stopped until its owner writes to it).
    ask_resume: Callable[[str], Awaitable[bool]] | None = None
    # The session's settings: limits, budgets, verification, a turn's rounds, sampling.
    session: SessionSettings = field(default_factory=SessionSettings)
    prices: dict[str, Price] = field(default_factory=dict)  # for the cost budget
    interactive: bool = False  # a person answers (the assessment may wait for the user)
    # A model's context window, when known (config, a table of known models, or the model
    # itself: a scripted one may claim one); None: compaction waits for a provider's
    # context-too-long error to learn it.
    windows: Callable[[Model], Window | None] = field(default=lambda model: claimed_window(model))
    # Reads an agent's own history back from the journal (the `recall` tool, which a
    # compaction's stubs name): `LiveSession.recall`; None, no such tool.
    recall: Lookup | None = None
    # The session's goal, and who decides on a re-planned version of its plan (None:
    # nobody now, and the session stops blocked until someone does; team/planning.py).
    goal: str = ""
    approve_plan: PlanApprover | None = None
    # The host program's answer to a subagent's question, asked before the task's owner
    # is told (None: questions go to owners only; team/asking.py).
    answer: QuestionAnswerer | None = None
    # Said to the main agent (and the builder) after its own system prompt.
    instructions: str = ""
    # The session's directory, where background calls keep their output (None: a
    # temporary directory, for a session that is not on disk).
    directory: Path | None = None
    # The ids of the messages its agents post: `m1`, `m2`, ... in a session; a task run
    # on a worker (engine/) posts `t3.m1`, ... so that its messages keep their ids in the
    # session that owns it, among the session's own.
    mail_prefix: str = "m"
    # The session's tasks that run beyond this team, whose writes a shell command's
    # changes are checked against too: a task on a worker runs in a team of its own
    # (engine/other_tasks.py reads the others from the engine's database). None: the
    # team's tasks are all the session's.
    other_tasks: OtherTasks | None = None

    def __post_init__(self) -> None:
        self.base_tools = session_tools(self.base_tools, self.definitions)

    def window(self, role: str) -> Window | None:
        """The context window of `role`'s model, when known."""
        return self.windows(self.models(role))

    @functools.cached_property
    def limits(self) -> Limits:
        """How far delegation may go, from the session's settings."""
        return limits_of(self.session)

    @functools.cached_property
    def assess(self) -> Policy:
        """How turn ends are assessed, from the session's settings."""
        return policy_of(self.session, self.prices, interactive=self.interactive)


def check_definitions(settings: TeamSettings) -> None:
    """Every tool an agent type names is one of the session's (a built-in type that names
    one it lacks is left out already, `Definitions.usable`), and its model resolves: a
    `ConfigError` naming the type and the tool (or the model's error) otherwise, before
    any agent runs (a misspelt tool would leave the type without it, its calls answered
    "unknown tool", and its tasks ending all the same)."""
    known = set(settings.base_tools.names())
    for definition in settings.definitions:
        try:
            settings.models(definition.name)
        except ConfigError as exc:  # an unknown model or provider
            raise ConfigError(f"agent type {definition.name!r}: {exc}") from exc
        unknown = [name for name in definition.tools if name not in known]
        if unknown:
            raise ConfigError(
                f"agent type {definition.name!r} names unknown tool(s) "
                f"{', '.join(map(repr, unknown))}; the session's tools are "
                f"{', '.join(sorted(known))}"
            )


def session_tools(base: ToolRegistry, definitions: Definitions) -> ToolRegistry:
    """`base` and the tools the agent definitions were given as objects, by name: `base`
    itself when they bring none it lacks (a new registry otherwise: `base` may be the
    caller's, shared by other sessions). A tool of a definition's that is not the one
    of its name in `base` is a `ConfigError` naming both."""
    added = []
    for name, (tool, role) in definitions.given_tools().items():
        have = base.get(name)
        if have is None:
            added.append(tool)
        elif have is not tool:
            raise ConfigError(
                f"two different tools are named {name!r}: one in the session's tools "
                f"(RunSettings.tools, TeamSettings.base_tools), another given in agent "
                f"type {role!r}"
            )
    return ToolRegistry([*base.tools(), *added]) if added else base


def claimed_window(model: Model) -> Window | None:
    """The window a model claims itself (`window`: a scripted model's), if any."""
    claimed = getattr(model, "window", None)
    context = getattr(claimed, "context", None)
    if not isinstance(context, int):
        return None
    output = getattr(claimed, "output", 0)
    return Window(context, output if isinstance(output, int) else 0)


def limits_of(settings: SessionSettings) -> Limits:
    """The delegation limits of `settings`."""
    s = settings
    caps = Caps(message_chars=s.message_chars, delivery_chars=s.delivery_chars)
    return Limits(
        s.max_depth,
        s.max_live,
        s.max_model_calls,
        s.wait_timeout,
        s.stall_after,
        caps,
        park_limit=s.park_limit,
    )


def policy_of(
    settings: SessionSettings, prices: dict[str, Price], *, interactive: bool = False
) -> Policy:
    """How turn ends are assessed under `settings`."""
    s = settings
    return Policy(
        max_auto_continues=s.max_auto_continues,
        stall_rounds=s.stall_rounds,
        verify=s.verify,
        note=s.continuation_note,
        serial=s.serial,
        budgets=Budgets(s.budget_rounds, s.budget_tokens, s.budget_cost, s.budget_wall),
        interactive=interactive,
        prices=prices,
    )
