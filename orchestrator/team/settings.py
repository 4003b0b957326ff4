"""What a team is given, as two values built once: `RunSettings`, the run's wiring (the
models, tools, approvers and sinks a command or a program chose: the CLI builds it in
cli/setup.py, the library in host/run.py, and `drive` hands the same value down), and
`Seat`, the session the team works in (its workspace, id and directory, and its settings
as its journal holds them). Nothing here is copied from one into the other: a part reads
what it uses from the value that owns it, and what is derived (the delegation `Limits`,
the assessment's `Policy`, the session's tools with the agent types' own) is derived here,
once."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from orchestrator.errors import ConfigError
from orchestrator.loop.assessment import Budgets
from orchestrator.loop.compaction import Window
from orchestrator.loop.plan import LIMITS, Plan, PlanLimits
from orchestrator.models.base import Model
from orchestrator.prices.cost import Price
from orchestrator.redaction import Redactor
from orchestrator.session.checkpoints import Checkpointer
from orchestrator.state.events import EventSink, NullSink
from orchestrator.state.mailbox import Caps
from orchestrator.state.plans import PlanSource
from orchestrator.state.settings import SessionSettings
from orchestrator.team.asking import (
    Decisions,
    HostApprover,
    QuestionAnswerer,
    RefOf,
    approvers,
    no_approver,
)
from orchestrator.team.definitions import Definitions
from orchestrator.team.hook_runs import Hook
from orchestrator.team.oversight import Policy
from orchestrator.team.plan_host import PlanApprover
from orchestrator.team.port import Runner
from orchestrator.team.subagent import InProcessRunner
from orchestrator.team.writes import OtherTasks
from orchestrator.tools import WORKSPACE_TOOLS, workspace_tools
from orchestrator.tools.base import ToolRegistry
from orchestrator.tools.permissions import Approver, PermissionPolicy, parse_rules
from orchestrator.tools.recall import Lookup
from orchestrator.tools.workspace import Workspace


@dataclass(frozen=True)
class RunSettings:
    """The run's wiring: what `drive` runs a session with besides its journal. Built
    once per run, and read by reference by every part below (never copied)."""

    model: Model
    # The session's tools (each agent type gets those its definition names; tools given
    # to a definition as objects are added).
    tools: ToolRegistry = field(default_factory=workspace_tools)
    # Sees every event, once journaled (a task on a worker's calls: once read, not journaled).
    ui: EventSink = field(default_factory=NullSink)
    policy: PermissionPolicy = field(default_factory=PermissionPolicy)
    # Answers a call the policy asks about, given an `ApprovalRequest` (team/asking.py).
    # None: nobody is asked, and such a call is refused as "no approver given".
    approve: HostApprover | None = None
    # The host's answer to a subagent's question before its owner is told (None: the
    # owner answers), and instructions added to the main agent's system prompt.
    answer: QuestionAnswerer | None = None
    instructions: str = ""
    # The session's settings as data (journaled): None runs with those its journal holds
    # (the defaults, journaled, for a session that has none); given and different from
    # the journal's, they are journaled and used from here on (an override).
    session: SessionSettings | None = None
    # The secret values kept out of every record and every printed line (state/scrub.py).
    redact: Redactor = field(default_factory=Redactor)
    # Called with the session's team once it is running, before the main agent takes
    # its turn (a library user keeps it to `say` something to the main agent or cancel a
    # task while the session runs); a coroutine function is awaited there.
    # (A `TeamHook` of team/runtime.py; its argument is typed `Any` here, so that the
    # settings a team is built from do not import the team: runtime.py imports this.)
    on_team: Callable[[Any], Awaitable[None] | None] | None = None
    # Where subagents run (default: in this process, on trio).
    runner: Callable[[trio.Nursery], Runner] = InProcessRunner
    # Asks the person whether to revive a task whose resume policy is `ask` (None: no one
    # to ask, such a task stays stopped until its owner writes to it).
    ask_resume: Callable[[str], Awaitable[bool]] | None = None
    # Said to the main agent as the run starts (a resume's answer to a blocked session).
    message: str = ""
    # The person's decisions on calls parked for approval, by request id, journaled as
    # the run starts (a resume's: team/asking.py's `decide`).
    approvals: Decisions = field(default_factory=dict)
    # Prices per model, for the cost budget and `RunResult.cost`; whether a person
    # answers at a terminal (the assessment may then wait for the user).
    prices: dict[str, Price] = field(default_factory=dict)
    interactive: bool = False
    # Subagents: their types, the model of each role (else `model` for all), and the
    # turn loop's approver per agent, of bare calls (the CLI's; else `approve`).
    definitions: Definitions = field(default_factory=Definitions.builtin)
    # A plain agent (a library `run` given no agent types): the main agent is offered
    # `tools` and nothing it did not ask for (the todo tools only when given among them,
    # no `report_blocked`, `recall` only once its context was compacted), and a system
    # prompt that says only what those tools need. False: a team's main agent (the CLI's).
    plain: bool = False
    models: Callable[[str], Model] | None = None
    approve_for: Callable[[str, str], Approver] | None = None  # (agent, who): wins over approve
    # The approver asks a person (the CLI's, at the terminal): each call put to it is told
    # to the `waiting` hooks as it is asked (docs/hooks.md).
    person_approves: bool = False
    # A model's context window, when known (the config's `[windows]`, the table of known
    # models); None: only what a model claims itself (a scripted one's script), and
    # compaction otherwise waits for a provider's context-too-long error to learn it.
    windows: Callable[[Model], Window | None] | None = None
    # Plans (docs/plans.md): `plan` runs a planner first, whose plan is decided on by
    # `approve_plan` (None: nobody decides now, and the run stops blocked until one does);
    # `plan_only` stops once a plan is submitted; `seed_plan` is a plan given whole (a
    # file, a program), submitted as the first version instead of asking a planner.
    plan: bool = False
    plan_only: bool = False
    approve_plan: PlanApprover | None = None
    seed_plan: Plan | None = None
    seed_source: PlanSource = "file"
    # How big a plan may be and how often it may be re-planned (`[plan]`; not journaled:
    # each run reads them from its config, as a library program gives them).
    plan_limits: PlanLimits = LIMITS
    # The person's hooks (docs/hooks.md): the config's `[[hooks]]`, a program's `hooks`.
    hooks: tuple[Hook, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.model, str):  # (its parts would fail later, far from here)
            raise TypeError(
                f"RunSettings.model takes a Model object, not the spec {self.model!r}: "
                "orc.run and orc.resume take a spec (model='openai:gpt-4.1'); drive runs "
                "with a model already made"
            )

    def model_for(self, role: str) -> Model:
        """The model of a role ("main", "worker", ...)."""
        return self.model if self.models is None else self.models(role)

    def window(self, role: str) -> Window | None:
        """The context window of `role`'s model, when known."""
        model = self.model if self.models is None else self.models(role)  # (model_for, inline)
        return claimed_window(model) if self.windows is None else self.windows(model)

    def approver(self, ref_of: RefOf | None = None) -> Callable[[str, str], Approver]:
        """The turn loop's approver of each agent's bare calls: `approve_for`, else
        `approve` asked with a request that names the agent and the call (`ref_of`),
        else nobody (refused)."""
        if self.approve_for is not None:
            return self.approve_for
        if self.approve is not None:
            return approvers(self.approve, ref_of)
        return lambda agent, who: no_approver

    @functools.cached_property
    def all_tools(self) -> ToolRegistry:
        """`tools` and the tools the agent definitions were given as objects."""
        return session_tools(self.tools, self.definitions)


@dataclass(frozen=True)
class Seat:
    """The session a team works in: its workspace, id and directory, its goal, its
    journal's `recall`, and its settings as the journal holds them (`SessionSettings`,
    read only from here)."""

    workspace: Workspace
    settings: SessionSettings = field(default_factory=SessionSettings)
    session_id: str = ""
    # Where background calls keep their output (None: a temporary directory, for a
    # session that is not on disk).
    directory: Path | None = None
    goal: str = ""
    # Reads an agent's own history back from the journal (the `recall` tool, which a
    # compaction's stubs name): `LiveSession.recall`; None, no such tool.
    recall: Lookup | None = None
    # The ids of the messages its agents post: `m1`, `m2`, ... in a session; a task run
    # on a worker (engine/) posts `t3.m1`, ... so that its messages keep their ids in the
    # session that owns it, among the session's own.
    mail_prefix: str = "m"
    # The ids of the tasks its agents delegate: `t1`, `t2`, ... in a session; a task run
    # on a worker names its own children `t3.t1`, ... so that their ids are the
    # session's, beside its own tasks' (engine/children.py).
    task_prefix: str = "t"
    # The session's tasks that run beyond this team, whose writes a shell command's
    # changes are checked against too: a task on a worker runs in a team of its own
    # (engine/other_tasks.py reads the others from the engine's database). None: the
    # team's tasks are all the session's.
    other_tasks: OtherTasks | None = None
    # Takes the workspace's checkpoints after calls (session/checkpoints.py); None: none
    # are taken (a session in memory, a task on a worker, no git).
    checkpoints: Checkpointer | None = None

    @functools.cached_property
    def limits(self) -> Limits:
        """How far delegation may go, from the session's settings."""
        return limits_of(self.settings)

    def policy(self, run: RunSettings) -> PermissionPolicy:
        """The run's permission policy with the session's own rules (`--allow`) after
        it; a `ConfigError` when they do not parse."""
        try:
            allowed = parse_rules(list(self.settings.allow))
        except ValueError as exc:
            raise ConfigError(f"the session's permission rules: {exc}") from exc
        return PermissionPolicy([*run.policy.rules, *allowed], run.policy.default)

    def assess(self, run: RunSettings) -> Policy:
        """How turn ends are assessed, from the session's settings and the run's prices."""
        return policy_of(
            self.settings, run.prices, interactive=run.interactive, plan_limits=run.plan_limits
        )


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


def check_definitions(run: RunSettings) -> None:
    """Every tool an agent type names is one of the session's (a built-in type that names
    one it lacks is left out already, `Definitions.usable`), and its model resolves: a
    `ConfigError` naming the type and the tool (or the model's error) otherwise, before
    any agent runs (a misspelt tool would leave the type without it, its calls answered
    "unknown tool", and its tasks ending all the same)."""
    known = set(run.all_tools.names())
    for definition in run.definitions:
        try:
            run.model_for(definition.name)
        except ConfigError as exc:  # an unknown model or provider
            raise ConfigError(f"agent type {definition.name!r}: {exc}") from exc
        unknown = [name for name in definition.tools if name not in known]
        if unknown:
            workspace = set(WORKSPACE_TOOLS).intersection(unknown)
            hint = (
                " (give the workspace's: tools=[*orc.workspace_tools(), ...])" if workspace else ""
            )
            raise ConfigError(
                f"agent type {definition.name!r} names unknown tool(s) "
                f"{', '.join(map(repr, unknown))}; the session's tools are "
                f"{', '.join(sorted(known)) or 'none'}{hint}"
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
                f"(RunSettings.tools), another given in agent "
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
    settings: SessionSettings,
    prices: dict[str, Price],
    *,
    interactive: bool = False,
    plan_limits: PlanLimits = LIMITS,
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
        plan_limits=plan_limits,
    )
