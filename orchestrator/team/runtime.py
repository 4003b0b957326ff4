"""The team: the runtime that lets agents delegate to subagents and talk through the
mailbox. It wires the task registry and the mailbox (their records and folds live in
`tasks.py` and `mailbox.py`) to the turn loop and to a subagent runner.

Everything durable goes through the session: the team emits records, the session
journals and folds them, and the team reads the folded state back (`state.tasks`,
`state.mailbox`, `state.agents`). What the team keeps itself is only runtime: who is
waiting for mail, which model call an interrupt would cancel, which subagents run. So
after a crash a new team over the resumed session is in the same place.

The coordination tools (`tools/coordination.py`) call its `Delegation`
(`delegation.py`), through the `Coordinator` protocol defined there.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio
from pydantic import BaseModel

from orchestrator.agent import TurnDeps
from orchestrator.errors import ToolFailed
from orchestrator.loop.assessment import REPEATS
from orchestrator.messages import (
    ToolCall,
    UserMessage,
)
from orchestrator.models.base import Model
from orchestrator.state.context import AgentContext
from orchestrator.state.events import EventSink, MessageAdded, TurnEnded, TurnEndReason
from orchestrator.state.fold import USER, SessionState
from orchestrator.state.mailbox import (
    DEFAULT_PRIORITY,
    Caps,
    Mail,
    MailKind,
    MessagePosted,
    MessagesDelivered,
    Priority,
    latest_progress_only,
    render,
)
from orchestrator.state.tasks import (
    SETTLED,
    TaskChanged,
    TaskRecord,
    TaskState,
    in_scope,
    now_ms,
)
from orchestrator.team.definitions import AgentDefinition, Definitions
from orchestrator.team.delegation import Delegation
from orchestrator.team.oversight import Oversight, Policy
from orchestrator.tools.base import ToolContext, ToolRegistry
from orchestrator.tools.coordination import (
    ReportBlockedMain,
    main_tools,
    subagent_tools,
)
from orchestrator.tools.permissions import (
    Approver,
    PermissionPolicy,
    approve_all,
    parse_rules,
)
from orchestrator.tools.todos import todo_tools
from orchestrator.tools.watch import Watched
from orchestrator.tools.workspace import Workspace

MAIN = "main"
WRITERS = frozenset({"write_file", "edit_file", "shell"})  # tools whose writes are watched


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


class BudgetSpent(Exception):
    """A task's agent reached its round or token budget: the task fails."""


def _check_budgets(state: SessionState, task: TaskRecord) -> None:
    """Refuse a model call of `task`'s agent once the budget of the task, or of a task
    above it, is spent: a task's budget covers its whole subtree."""
    current: TaskRecord | None = task
    while current is not None:
        if current.round_budget or current.token_budget:
            _check_subtree(state, current, "its" if current is task else "the")
        current = state.tasks.get(current.owner)


def _check_subtree(state: SessionState, task: TaskRecord, whose: str) -> None:
    members = [state.agents.get(t.task_id) for t in state.tasks.subtree(task.task_id)]
    contexts = [c for c in members if c is not None]
    where = "" if whose == "its" else f" of task {task.task_id}, above it,"
    steps = sum(c.steps for c in contexts)
    if task.round_budget and steps >= task.round_budget:
        raise BudgetSpent(f"it used {whose} budget{where} of {task.round_budget} model calls")
    if task.token_budget:
        # Before every model call of every task: the running counters, not a Usage model.
        spent = sum(c.usage.total_tokens for c in contexts)
        if spent >= task.token_budget:
            raise BudgetSpent(
                f"it spent {spent} of {whose} budget{where} of {task.token_budget} tokens"
            )


class SessionLike(Protocol):
    """A `LiveSession` or a `MemorySession`: folds what it is given into `state`."""

    state: SessionState

    async def emit(self, event: Any, *, durable: bool = False) -> None: ...


class Runner(Protocol):
    """Where subagents run. In-process on trio today (subagent.InProcessRunner); a
    durable-execution engine later, behind the same two calls."""

    def start(self, team: Team, task_id: str) -> None: ...

    def cancel(self, task_id: str) -> None: ...


@dataclass
class _Agent:
    """The runtime of one agent: its wake-up, its model call in flight, its tools' verdict."""

    wake: trio.Event = field(default_factory=trio.Event)
    model_scope: trio.CancelScope | None = None
    tool_scopes: set[trio.CancelScope] = field(default_factory=set)
    yielded: bool = False


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


class Team:
    """The agents of one session and the mail between them."""

    def __init__(
        self, session: SessionLike, sink: EventSink, settings: TeamSettings, runner: Runner
    ) -> None:
        self.session = session
        self.sink = sink  # journals (via the session) and shows every event
        self.settings = settings
        self.runner = runner
        self._agents: dict[str, _Agent] = {}
        self._approval = trio.Lock()  # one question at a time on the one terminal
        self._model_slots = trio.Semaphore(settings.limits.max_model_calls)
        # Ids are given here, in order, before their records reach the fold.
        self.task_count = len(session.state.tasks.tasks)
        self._mail_count = session.state.mailbox.posted_count
        self._deps: dict[str, TurnDeps] = {}
        self._started: set[str] = set()  # tasks whose loops run (or wait for mail)
        self._resumed: set[str] = set()  # of those, the ones live before a restart
        # Pending tasks in the order they became pending (queued for a live slot).
        self._queue: collections.deque[str] = collections.deque(
            t.task_id for t in session.state.tasks.tasks.values() if t.state == "pending"
        )
        self._role_tools: dict[str, ToolRegistry] = {}  # one registry (and schema) per role
        self._loops_ended = trio.Event()
        self.delegation = Delegation(self)  # what the coordination tools call
        self.changed: trio.Event = trio.Event()  # set on every task change (wait_tasks)
        self.oversight = Oversight(self, settings.assess)  # assessment, todos, budgets

    # --- state ------------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        return self.session.state

    def task(self, task_id: str) -> TaskRecord:
        record = self.state.tasks.get(task_id)
        if record is None:
            known = ", ".join(self.state.tasks.tasks) or "none"
            raise ToolFailed(f"no task {task_id!r}; tasks of this session: {known}")
        return record

    def owned_by(self, agent: str) -> list[TaskRecord]:
        return self.state.tasks.children(agent)

    def live_children(self, agent: str) -> list[TaskRecord]:
        """`agent`'s tasks that are live or about to be (a completed task whose owner
        wrote to it while it completed goes on to read that)."""
        return [t for t in self.owned_by(agent) if self.has_work(t)]

    def has_work(self, task: TaskRecord) -> bool:
        if task.live:
            return True
        return task.state == "completed" and bool(self.mail_from_owner(task.task_id))

    def _runtime(self, agent: str) -> _Agent:
        runtime = self._agents.get(agent)
        if runtime is None:
            runtime = self._agents[agent] = _Agent()
        return runtime

    def notify_change(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    # --- records ------------------------------------------------------------------------

    async def set_state(
        self, task_id: str, state: TaskState, *, by: str, reason: str = "", instance: str = ""
    ) -> None:
        # Not waited for on disk: whatever acts on the change (the task's loop, its owner's
        # next record) is journaled after it, so no journal holds one without the other,
        # and a side effect waits for its own durable start, which covers this too.
        await self.sink.emit(
            TaskChanged(
                agent=by, task=task_id, state=state, reason=reason, instance=instance, at=now_ms()
            )
        )
        self.notify_change()

    async def post(
        self,
        sender: str,
        to: str,
        task_id: str,
        kind: MailKind,
        summary: str,
        *,
        data: dict[str, Any] | None = None,
        priority: Priority | None = None,
        requires_ack: bool = False,
        in_reply_to: str = "",
        ref: str = "",
    ) -> Mail:
        """Journal a message, then wake its recipient as its priority says (and revive a
        settled task that its owner writes to)."""
        # Numbered here, not by the fold: several posts may be on their way to the journal.
        self._mail_count += 1
        message_id = f"m{self._mail_count}"
        record = MessagePosted(
            agent=sender,
            id=message_id,
            to=to,
            task=task_id,
            mail=kind,
            priority=priority or DEFAULT_PRIORITY[kind],
            summary=summary,
            data=data,
            requires_ack=requires_ack,
            in_reply_to=in_reply_to,
            ref=ref,
            at=now_ms(),
        )
        # Between agents the journal's order is enough (a delivery is journaled after its
        # post); what a person says is on disk before `say` returns.
        await self.sink.emit(record, durable=sender == USER)
        # (A message without a posting call may already be delivered and gone.)
        mail = self.state.mailbox.get(message_id) or Mail.of(0, record)
        self.notify_change()
        runtime = self._runtime(to)
        runtime.wake.set()  # a sleeper checks the priority it waits for (wait_for_mail)
        if mail.priority == "interrupt":
            # The model call in flight, and tool calls that can stop safely.
            if runtime.model_scope is not None:
                runtime.model_scope.cancel()
            for scope in runtime.tool_scopes:
                scope.cancel()
        target = self.state.tasks.get(to)
        if target is not None and target.state in SETTLED and sender == target.owner:
            await self.revive(to, by=sender)
        return mail

    async def say(self, text: str, *, priority: Priority = "urgent") -> Mail:
        """A message from the user to the main agent while the session runs: `urgent`
        (the default) reaches it at its next step, or wakes it while it waits for its
        tasks; `interrupt` stops its model call in flight."""
        return await self.post(USER, MAIN, "", "instruction", text, priority=priority)

    async def watch_stalls(self) -> None:
        """Report, once, each running task that made no progress (no model reply, no new
        message in its context) for `stall_after` seconds: a `risk_alert` to its owner."""
        after = self.settings.limits.stall_after
        seen: dict[str, tuple[int, int, float]] = {}
        reported: set[str] = set()
        while True:
            await trio.sleep(after / 4)
            now = trio.current_time()
            for task in list(self.state.tasks.tasks.values()):
                context = self.state.agents.get(task.task_id)
                if task.state != "running" or context is None:
                    seen.pop(task.task_id, None)
                    continue
                mark = (context.steps, len(context.messages))
                before = seen.get(task.task_id)
                if before is None or before[:2] != mark:
                    seen[task.task_id] = (*mark, now)
                    reported.discard(task.task_id)
                elif now - before[2] >= after and task.task_id not in reported:
                    reported.add(task.task_id)
                    quiet = now - before[2]
                    await self.post(
                        task.task_id,
                        task.owner,
                        task.task_id,
                        "risk_alert",
                        f"stalled: no progress for {quiet:.0f} s (a model or tool call may "
                        "hang); cancel_task it, or send_message to redirect it",
                        data={"stalled_seconds": round(quiet)},
                    )

    async def deliver(self, agent: str, *, at_least: Priority = "notify") -> list[Mail]:
        """Put `agent`'s waiting mail (of at least that priority) into its context, as one
        record that is also the acknowledgement. Several progress reports from one task
        arrive as its latest only (the rest stay in the task's timeline)."""
        waiting = self.state.mailbox.undelivered(agent, at_least=at_least)
        if not waiting:
            return []
        context = self.state.agents.get(agent)
        if context is None or context.open_calls:
            return []
        shown = latest_progress_only(waiting)
        content = render(shown, self.settings.limits.caps)
        await self.sink.emit(
            MessagesDelivered(
                agent=agent, ids=tuple(m.message_id for m in waiting), content=content
            )
        )
        return waiting

    async def wait_for_mail(self, agent: str, *, at_least: Priority = "urgent") -> None:
        """Sleep (not poll) until `agent` has undelivered mail of at least that priority."""
        while not self.state.mailbox.undelivered(agent, at_least=at_least):
            runtime = self._runtime(agent)
            runtime.wake = trio.Event()
            if self.state.mailbox.undelivered(agent, at_least=at_least):
                return
            await runtime.wake.wait()

    # --- what the turn loop calls (RoundHooks) --------------------------------------------

    async def before_round(self, context: AgentContext) -> None:
        self.oversight.check_budgets()
        task = self.state.tasks.get(context.id)
        if task is not None:
            _check_budgets(self.state, task)
        await self.deliver(context.id, at_least="urgent")

    @contextlib.contextmanager
    def model_call(self, agent: str) -> Iterator[trio.CancelScope]:
        runtime = self._runtime(agent)
        with trio.CancelScope() as scope:
            runtime.model_scope = scope
            try:
                yield scope
            finally:
                runtime.model_scope = None

    @contextlib.contextmanager
    def tool_call(self, agent: str) -> Iterator[trio.CancelScope]:
        runtime = self._runtime(agent)
        with trio.CancelScope() as scope:
            runtime.tool_scopes.add(scope)
            try:
                yield scope
            finally:
                runtime.tool_scopes.discard(scope)

    def take_yield(self, agent: str) -> bool:
        runtime = self._runtime(agent)
        yielded, runtime.yielded = runtime.yielded, False
        # The same call again and again: end the turn, for the assessment to stop it.
        return yielded or self.state.progress_of(agent).call_repeats >= REPEATS

    def end_turn(self, agent: str) -> None:
        """A tool of `agent` ended its turn (complete, ask_decision, report_blocked)."""
        self._runtime(agent).yielded = True

    # --- turns ------------------------------------------------------------------------

    def definition(self, agent: str) -> AgentDefinition | None:
        task = self.state.tasks.get(agent)
        return None if task is None else self.settings.definitions.get(task.agent_type)

    def turn_deps(self, agent: str) -> TurnDeps:
        deps = self._deps.get(agent)
        if deps is not None:
            return deps
        s = self.settings
        definition = self.definition(agent)
        role = MAIN if definition is None else definition.name
        tools = self._tools(definition)
        max_rounds = s.max_rounds if definition is None else definition.max_rounds
        approve = s.approve_for(agent, self._who(agent)) if s.approve_for else s.approve
        policy = s.policy
        if definition is not None and definition.allow:
            # The type's own rules, after the session's (a later rule wins among equals).
            rules = [*policy.rules, *parse_rules(list(definition.allow))]
            policy = PermissionPolicy(rules=rules, default=policy.default)
        deps = TurnDeps(
            model=_Limited(s.models(role), self._model_slots),
            tools=tools,
            context=ToolContext(workspace=s.workspace, agent=agent, session=s.session_id),
            events=self.sink,
            policy=policy,
            approve=self._one_at_a_time(approve),
            grants=lambda: self.state.grants,
            max_rounds=max_rounds,
            max_tokens=s.max_tokens,
            temperature=s.temperature,
            redact=s.redact,
            hooks=self,
            guard=self._guard(agent),
            durable_turn_end=agent == MAIN,
        )
        self._deps[agent] = deps
        return deps

    def _tools(self, definition: AgentDefinition | None) -> ToolRegistry:
        """The tools of a role, built once for all its agents: the same objects, so
        their JSON schemas are made once (and the request prefix is the same)."""
        role = MAIN if definition is None else definition.name
        tools = self._role_tools.get(role)
        if tools is not None:
            return tools
        base = self.settings.base_tools.tools()
        todos = todo_tools(self.oversight)
        if definition is None:
            blocked = ReportBlockedMain(self.oversight)
            tools = ToolRegistry([*base, *main_tools(self.delegation), *todos, blocked])
        else:
            own = [
                Watched(t, self.delegation.note_writes) if t.name in WRITERS else t
                for t in base
                if t.name in definition.tools
            ]
            extra = subagent_tools(self.delegation, may_delegate=definition.may_delegate)
            tools = ToolRegistry([*own, *extra, *todos])
        self._role_tools[role] = tools
        return tools

    def _who(self, agent: str) -> str:
        task = self.state.tasks.get(agent)
        if task is None:
            return "the main agent"
        return f"task {agent} ({task.agent_type}: {task.description})"

    def _one_at_a_time(self, approve: Approver) -> Approver:
        async def ask(call: ToolCall) -> Any:
            async with self._approval:
                return await approve(call)

        return ask

    def _guard(self, agent: str) -> Callable[[ToolCall, BaseModel], str | None]:
        def guard(call: ToolCall, args: BaseModel) -> str | None:
            task = self.state.tasks.get(agent)
            path = getattr(args, "path", None)
            if task is None or call.name not in ("write_file", "edit_file") or path is None:
                return None
            if not in_scope(str(path), task.write_scope):
                scope = ", ".join(task.write_scope or ()) or "nothing"
                return (
                    f"{call.name} refused: {path} is outside this task's write scope "
                    f"({scope}); ask your owner with request_direction_change if you need it"
                )
            return None

        return guard

    # --- running and stopping ------------------------------------------------------------

    def enqueue(self, task_id: str) -> None:
        """A task became pending (made, revived): start it when there is room."""
        self._queue.append(task_id)
        self.start_waiting()

    def start_waiting(self) -> None:
        """Start pending tasks, oldest first, while there is room under the live-subagent
        limit."""
        limit = self.settings.limits.max_live
        later: list[str] = []  # pending again while its old loop still ends (a retry)
        while self._queue and len(self._started) < limit:
            task_id = self._queue.popleft()
            task = self.state.tasks.get(task_id)
            if task is None or task.state != "pending":
                continue
            if task_id in self._started:
                later.append(task_id)
                continue
            self._started.add(task_id)
            self.runner.start(self, task_id)
        self._queue.extendleft(reversed(later))

    def is_running(self, task_id: str) -> bool:
        return task_id in self._started

    def resume(self, task_id: str) -> None:
        """Run a task that was live when the session stopped (see main_agent)."""
        self._started.add(task_id)
        self._resumed.add(task_id)
        self.runner.start(self, task_id)

    def take_resumed(self, task_id: str) -> bool:
        """Whether the task's loop starts after a restart (asked once, by the loop)."""
        resumed = task_id in self._resumed
        self._resumed.discard(task_id)
        return resumed

    def mail_from_owner(self, task_id: str) -> list[Mail]:
        """Undelivered messages from the task's owner."""
        owner = self.task(task_id).owner
        return [m for m in self.state.mailbox.undelivered(task_id) if m.sender == owner]

    async def revive(self, task_id: str, *, by: str) -> None:
        """Run a settled task again over its own context (a follow-up, or a retry)."""
        task = self.task(task_id)
        if task.state not in SETTLED:
            return
        await self.set_state(task_id, "pending", by=by, reason="revived")
        self.enqueue(task_id)

    async def cancel(self, by: str, task_id: str, reason: str) -> list[str]:
        """Cancel a task and everything under it, deepest first."""
        cancelled = []
        for task in reversed(self.state.tasks.subtree(task_id)):
            if task.state in SETTLED:
                continue
            self.runner.cancel(task.task_id)
            await self.set_state(task.task_id, "cancelled", by=by, reason=reason)
            cancelled.append(task.task_id)
        return cancelled

    def task_ended(self, task_id: str) -> None:
        """The runner's loop for `task_id` returned: make room for another."""
        self._started.discard(task_id)
        self.start_waiting()
        self._loops_ended.set()

    async def settled_loops_ended(self) -> None:
        """Wait until no settled task's loop still runs: it ends by itself, once its last
        records (such as its turn's end) are written. Loops of live tasks are not waited
        for."""
        while any(not self.task(t).live for t in self._started):
            self._loops_ended = trio.Event()
            await self._loops_ended.wait()

    async def nudge(self, agent: str, text: str) -> None:
        await self.sink.emit(MessageAdded(agent=agent, message=UserMessage(content=text)))

    async def end_open_turn(self, agent: str, reason: TurnEndReason) -> None:
        context = self.state.agents.get(agent)
        if context is not None and context.turn_open:
            with trio.CancelScope(shield=True):
                # Durable for the main agent only, as in the turn loop (TurnDeps).
                await self.sink.emit(
                    TurnEnded(agent=agent, reason=reason, rounds=0), durable=agent == MAIN
                )


class _Limited:
    """A model whose calls take one of the session's model-call slots."""

    def __init__(self, model: Model, slots: trio.Semaphore) -> None:
        self._model = model
        self._slots = slots

    @property
    def name(self) -> str:
        return self._model.name

    @contextlib.asynccontextmanager
    async def stream(self, request: Any) -> Any:
        async with self._slots, self._model.stream(request) as events:
            yield events
