"""The turn factory: what an agent's turns run with (`TurnDeps`). The model takes one
of the session's model-call slots per call; each role's tools are built once; a task's
type adds its permission rules; one approval question is asked at a time; a write outside
the task's write scope is refused before it runs. It also writes the few turn records
the loops write outside a turn (a nudge, the end of a turn left open)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio
from pydantic import BaseModel

from orchestrator.agent import RoundHooks, TurnDeps
from orchestrator.agent.deps import ToolHooks
from orchestrator.errors import ScopeEscape, ToolFailed, WorkspaceEscape
from orchestrator.messages import ToolCall, UserMessage
from orchestrator.models.base import Model, ToolSpec
from orchestrator.models.fallback import Fallback
from orchestrator.state.events import (
    EventSink,
    MessageAdded,
    PermissionGranted,
    TurnEnded,
    TurnEndReason,
)
from orchestrator.state.fallbacks import Fallbacks
from orchestrator.state.tasks import in_scope
from orchestrator.team import queries
from orchestrator.team.asking import journaled_answer, who
from orchestrator.team.background import BackgroundCalls
from orchestrator.team.definitions import AgentDefinition
from orchestrator.team.delegation import Delegation
from orchestrator.team.oversight import Oversight
from orchestrator.team.plan_host import Planning
from orchestrator.team.port import SessionLike
from orchestrator.team.queries import BUILDER, MAIN, PLANNER, is_planner
from orchestrator.team.settings import RunSettings, Seat
from orchestrator.team.slots import SlottedModel
from orchestrator.team.writes import Writes
from orchestrator.tools.base import AnyTool, ToolContext, ToolRegistry
from orchestrator.tools.coordination import (
    CancelTask,
    ListTasks,
    ReportBlockedMain,
    WaitTasks,
    main_tools,
    subagent_tools,
)
from orchestrator.tools.deferred import on_demand
from orchestrator.tools.permissions import Answer, Approver, PermissionPolicy, parse_rules
from orchestrator.tools.planning import Replan, SubmitPlan
from orchestrator.tools.recall import Recall
from orchestrator.tools.task_output import ReadTaskOutput
from orchestrator.tools.todos import todo_tools
from orchestrator.tools.watch import Watched

WRITERS = frozenset({"write_file", "edit_file", "shell"})  # tools whose writes are watched


class Turns:
    """The `TurnDeps` of each agent of one team, made once per agent."""

    def __init__(
        self,
        run: RunSettings,
        seat: Seat,
        session: SessionLike,
        sink: EventSink,
        hooks: RoundHooks,
        delegation: Delegation,
        oversight: Oversight,
        writes: Writes,
        planning: Planning,
        models: ModelCalls,
        usable: Callable[[str], int],
        background: BackgroundCalls | None = None,
        *,
        tool_hooks: ToolHooks | None = None,
        asking: Callable[[str, ToolCall, str], None] | None = None,
    ) -> None:
        self._run = run
        self._tool_hooks = tool_hooks
        self._asking = asking  # told as a call is put to a person (the `waiting` hooks)
        self._seat = seat
        self._policy = seat.policy(run)  # the run's rules, then the session's own
        self._approve_for = run.approver(self._ref_of)
        self._background = background
        self._planning = planning
        self._session = session
        self._sink = sink
        self._hooks = hooks
        self._delegation = delegation
        self._oversight = oversight
        self._writes = writes
        self._approval = trio.Lock()  # one question at a time on the one terminal
        self._models = models
        self._deps: dict[str, TurnDeps] = {}
        self._role_tools: dict[str, ToolRegistry] = {}  # one registry (and schema) per role
        # Shared by the turns of every agent (of a role), not made for each: a thousand
        # subagents' closures kept alive tipped the collector into full passes (W3).
        self._usable = usable  # of a role's window, as compaction measures it
        self._usables: dict[str, Callable[[], int]] = {}
        self._grants = self._session_grants
        self._note = background.note if background is not None else _no_note

    def turn_deps(self, agent: str) -> TurnDeps:
        deps = self._deps.get(agent)
        if deps is not None:
            return deps
        run, seat = self._run, self._seat
        definition = queries.definition(self._session.state, run.definitions, agent)
        role = self._role(agent, definition)
        tools = self._planner_tools() if is_planner(agent) else self._tools(definition)
        tools = on_demand(tools, self._usable(role), self._loaded, agent)  # docs/mcp.md
        max_rounds = seat.settings.max_rounds if definition is None else definition.max_rounds
        policy = self._policy
        if definition is not None and definition.allow:
            # The type's own rules, after the session's (a later rule wins among equals).
            rules = [*policy.rules, *parse_rules(list(definition.allow))]
            policy = PermissionPolicy(rules=rules, default=policy.default)
        model = self._models.model(role)
        deps = TurnDeps(
            model=model,
            tools=tools,
            context=ToolContext(
                workspace=seat.workspace,
                agent=agent,
                session=seat.session_id,
                session_directory=seat.directory,
                write_scope=self._write_scope(agent),
                background=self._background,
                todos=self._oversight,
                model=model,  # (an MCP server's sampling: mcp/sampling.py)
            ),
            events=self._sink,
            policy=policy,
            approve=self.approver(agent),
            grants=self._grants,
            parks=agent == MAIN,  # (a subagent's `Later` is `Unasked`: docs/library.md)
            journaled=self._main_journaled if agent == MAIN else _never_parked,
            max_rounds=max_rounds,
            max_tokens=seat.settings.max_tokens,
            temperature=seat.settings.temperature,
            hooks=self._hooks,
            guard=self._guard(agent),
            tool_hooks=self._tool_hooks,
            durable_turn_end=agent == MAIN,
            usable=self._usable_of(role),
            note=self._note,
            checkpoint=seat.checkpoints.after_call if seat.checkpoints is not None else None,
        )
        self._deps[agent] = deps
        return deps

    def _role(self, agent: str, definition: AgentDefinition | None) -> str:
        """Whose model an agent's turns use: its type's, the planner's, the builder's
        (the main agent of a session with a plan), or the main agent's."""
        if definition is not None:
            return definition.name
        if is_planner(agent):
            return PLANNER
        return BUILDER if self._session.state.plans.versions else MAIN

    def _planner_tools(self) -> ToolRegistry:
        """The planner's: the read-only workspace tools, `recall` and `submit_plan`."""
        tools = self._role_tools.get(PLANNER)
        if tools is None:
            readers = [t for t in self._run.all_tools.tools() if t.read_only]
            recall = self._seat.recall
            extra = [Recall(recall)] if recall is not None else []
            submit = SubmitPlan(self._planning, self._run.plan_limits)
            tools = ToolRegistry([*readers, *extra, submit])
            self._role_tools[PLANNER] = tools
        return tools

    def _loaded(self, agent: str) -> Sequence[str]:
        """The MCP tools `agent` loaded on demand (mcp/demand.py), in order."""
        return self._session.state.mcp.loaded.get(agent, ())

    def _session_grants(self) -> Sequence[PermissionGranted]:
        return self._session.state.grants

    def _usable_of(self, role: str) -> Callable[[], int]:
        usable = self._usables.get(role)
        if usable is None:
            usable = self._usables[role] = functools.partial(self._usable, role)
        return usable

    def _compacted(self) -> bool:
        """Whether the main agent's context was compacted (pruned, or summarised)."""
        context = self._session.state.agents.get(MAIN)
        return context is not None and context.compactions > 0

    def _tools(self, definition: AgentDefinition | None) -> ToolRegistry:
        """The tools of a role, built once for all its agents: the same objects, so
        their JSON schemas are made once (and the request prefix is the same)."""
        role = MAIN if definition is None else definition.name
        tools = self._role_tools.get(role)
        if tools is not None:
            return tools
        base = self._run.all_tools.tools()
        recall = self._seat.recall
        if definition is None and self._run.plain:
            # What the tools given need: following a call in the background, and `recall`
            # once a compaction pruned what it names.
            offered = [*base, *self._background_tools(base, [])]
            tools = (
                ToolRegistry(offered)
                if recall is None
                else _Plain(offered, Recall(recall), self._compacted)
            )
            self._role_tools[role] = tools
            return tools
        given = {t.name for t in base}  # todo tools given as objects are not added twice
        todos = [t for t in todo_tools() if t.name not in given]
        if recall is not None:  # every agent may read back what a compaction pruned
            todos = [*todos, Recall(recall)]
        if definition is None:
            blocked = ReportBlockedMain(self._oversight)
            # The builder (the main agent of a session with a plan) may send a task back.
            plans = [Replan(self._planning)] if self._session.state.plans.versions else []
            # No agent types (a program's own registry lacking the built-ins' tools): no
            # tool to delegate with.
            delegating = main_tools(self._delegation) if len(self._run.definitions) else []
            later = self._background_tools(base, delegating)
            tools = ToolRegistry([*base, *delegating, *later, *todos, blocked, *plans])
        else:
            own = [
                Watched(t, self._writes.note_writes) if t.name in WRITERS else t
                for t in base
                if t.name in definition.tools
            ]
            extra = subagent_tools(self._delegation, may_delegate=definition.may_delegate)
            later = self._background_tools(own, extra)
            tools = ToolRegistry([*own, *extra, *later, *todos])
        self._role_tools[role] = tools
        return tools

    def _background_tools(self, own: list[AnyTool], coordination: list[AnyTool]) -> list[AnyTool]:
        """For an agent with a tool that may run in the background: reading such a call's
        output, and waiting for, cancelling and listing its tasks (the delegating tools,
        which it may lack)."""
        if self._background is None or not any(t.background for t in own):
            return []
        have = {t.name for t in coordination}
        lacking = [t for t in (WaitTasks, CancelTask, ListTasks) if t.name not in have]
        return [ReadTaskOutput(self._background), *(t(self._delegation) for t in lacking)]

    def _who(self, agent: str) -> str:
        return who(self._session.state, agent)

    def _ref_of(self, agent: str, call: ToolCall) -> str:
        """The ref of `agent`'s open call `call` (the very object its turn runs)."""
        context = self._session.state.agents.get(agent)
        calls = context.open_calls.items() if context is not None else ()
        found = next((ref for ref, open_call in calls if open_call is call), "")
        # (A call whose arguments a hook changed is a new object with the call's id.)
        return found or next((ref for ref, open_call in calls if open_call.id == call.id), "")

    def _main_journaled(self, ref: str) -> Answer | None:
        return journaled_answer(self._session.state, MAIN, ref)

    def definition(self, task_id: str) -> AgentDefinition:
        """The type of the agent working task `task_id`."""
        agent_type = queries.task(self._session.state, task_id).agent_type
        return self._run.definitions.get(agent_type)

    def redact(self, text: str) -> str:
        return self._run.redact(text)

    async def approve(self, agent: str, call: ToolCall) -> Answer:
        return await self.approver(agent)(call)

    def approver(self, agent: str) -> Approver:
        """Who answers `agent`'s calls that the rules ask about (one question at a time
        for the whole team): the host's approver, told whose call it is."""
        return self._one_at_a_time(agent, self._approve_for(agent, self._who(agent)))

    def _one_at_a_time(self, agent: str, approve: Approver) -> Approver:
        async def ask(call: ToolCall) -> Any:
            async with self._approval:
                if self._asking is not None:
                    self._asking(agent, call, self._ref_of(agent, call))
                return await approve(call)

        return ask

    def _write_scope(self, agent: str) -> tuple[str, ...] | None:
        task = self._session.state.tasks.get(agent)
        return None if task is None or task.write_scope is None else tuple(task.write_scope)

    def _guard(self, agent: str) -> Callable[[ToolCall, BaseModel], Awaitable[str | None]]:
        """Refuses a task's write outside its write scope before it is asked about: on
        where the path resolves (the file tools check again as they open it). A path
        written inside the scope that leads outside it is reported to the owner."""

        async def guard(call: ToolCall, args: BaseModel) -> str | None:
            # The call's name first: reading a missing field of a pydantic model is slow.
            if call.name not in ("write_file", "edit_file"):
                return None
            task = self._session.state.tasks.get(agent)
            path = getattr(args, "path", None)
            if task is None or path is None:
                return None
            try:
                self._seat.workspace.writable(str(path), task.write_scope)
            except ScopeEscape as exc:
                if exc.resolved:
                    await self._writes.note_escape(agent, call.name, exc.written, exc.resolved)
                return (
                    f"{call.name} refused: {exc}; ask your owner with "
                    "request_direction_change if you need it"
                )
            except WorkspaceEscape as exc:
                if in_scope(str(path), task.write_scope):
                    await self._writes.note_escape(agent, call.name, str(path), "")
                return f"{call.name} refused: {exc}"
            except ToolFailed:
                return None  # (a symlink loop) the tool says so
            return None

        return guard

    async def nudge(self, agent: str, text: str) -> None:
        await self._sink.emit(MessageAdded(agent=agent, message=UserMessage(content=text)))

    async def end_open_turn(self, agent: str, reason: TurnEndReason) -> None:
        context = self._session.state.agents.get(agent)
        if context is not None and context.turn_open:
            with trio.CancelScope(shield=True):
                # Durable for the main agent only, as in the turn loop (TurnDeps).
                await self._sink.emit(
                    TurnEnded(agent=agent, reason=reason, rounds=0), durable=agent == MAIN
                )


class ModelCalls:
    """The run's models, each call taking one of the session's model-call slots: the
    turns' calls and the compactor's summaries alike. A fallback chain goes on with the
    model the session's journal says it is on (`fallbacks`) from its first call here."""

    def __init__(self, run: RunSettings, slots: int, fallbacks: Fallbacks | None = None) -> None:
        self._run = run
        self._slots = trio.Semaphore(slots)
        self._limited: dict[str, SlottedModel] = {}  # one per role, not one per agent or call
        self._fallbacks = fallbacks

    def model(self, role: str) -> Model:
        """`role`'s model, its calls taking one of the slots."""
        model = self._run.model_for(role)
        limited = self._limited.get(role)
        if limited is None or limited.model is not model:
            if isinstance(model, Fallback) and all(
                made.model is not model for made in self._limited.values()
            ):
                self._restore(model)
            limited = self._limited[role] = SlottedModel(model, self._slots)
        return limited

    def _restore(self, chain: Fallback) -> None:
        at = None if self._fallbacks is None else self._fallbacks.chains.get(chain.spec)
        if at is not None:
            chain.restore(at.model, at.at)


class _Plain(ToolRegistry):
    """A plain agent's tools (`RunSettings.plain`): those given, and `recall` from its
    first compaction on, when pruned outputs name it (added then, in the middle of a
    turn if it falls there; the requests before it are not sent a tool they cannot use)."""

    def __init__(self, tools: Sequence[AnyTool], recall: Recall, compacted: Callable[[], bool]):
        super().__init__(tools)
        self._recall: Recall | None = recall
        self._compacted = compacted

    def _offer(self) -> None:
        if self._recall is not None and self._compacted():
            self.add(self._recall)
            self._recall = None

    def specs(self) -> tuple[ToolSpec, ...]:
        self._offer()
        return super().specs()

    def get(self, name: str) -> AnyTool | None:
        self._offer()
        return super().get(name)


def _no_note(agent: str) -> str:
    """An agent's note of its calls in the background, in a team that runs none."""
    return ""


def _never_parked(ref: str) -> Answer | None:
    """A subagent's calls never park (`TurnDeps.journaled`)."""
    return None
