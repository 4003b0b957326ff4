"""The team: the runtime that lets agents delegate to subagents and talk through the
mailbox. It wires the task registry and the mailbox (their records and folds live in
`tasks.py` and `mailbox.py`) to the turn loop and to a subagent runner.

Everything durable goes through the session: the team emits records, the session
journals and folds them, and the team reads the folded state back (`state.tasks`,
`state.mailbox`, `state.agents`). What the team keeps itself is only runtime: who is
waiting for mail, which model call an interrupt would cancel, which subagents run. So
after a crash a new team over the resumed session is in the same place.

The coordination tools (`tools/coordination.py`) call the team through the
`Coordinator` protocol defined there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
import trio
from pydantic import BaseModel

from orchestrator.agent import TurnDeps
from orchestrator.context import AgentContext
from orchestrator.definitions import AgentDefinition, Definitions
from orchestrator.errors import ToolFailed
from orchestrator.events import AgentStarted, EventSink, MessageAdded, TurnEnded, TurnEndReason
from orchestrator.mailbox import (
    DEFAULT_PRIORITY,
    RANK,
    Caps,
    Mail,
    MailKind,
    MessagePosted,
    MessagesDelivered,
    Priority,
    render,
)
from orchestrator.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from orchestrator.models.base import Model
from orchestrator.state import SessionState
from orchestrator.tasks import (
    SETTLED,
    TaskChanged,
    TaskCreated,
    TaskRecord,
    TaskState,
    in_scope,
    now_ms,
    scope_within,
)
from orchestrator.tools.base import ToolContext, ToolOutput, ToolRegistry
from orchestrator.tools.coordination import (
    DelegateArgs,
    SendMessageArgs,
    main_tools,
    subagent_tools,
)
from orchestrator.tools.permissions import (
    Approver,
    PermissionPolicy,
    approve_all,
    parse_rules,
)
from orchestrator.tools.watch import Watched, changed_by_shell
from orchestrator.tools.workspace import Workspace

MAIN = "main"
WRITERS = frozenset({"write_file", "edit_file", "shell"})  # tools whose writes are watched
PARKING = frozenset({"decision_required", "blocked"})  # kinds that park a task until answered
USER = "user"  # the sender of what the person (or the library user) says to the main agent


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
    main_prompt: str = ""


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
        self._task_count = len(session.state.tasks.tasks)
        self._mail_count = len(session.state.mailbox.messages)
        self._deps: dict[str, TurnDeps] = {}
        self._started: set[str] = set()  # tasks whose loops run (or wait for mail)
        self._resumed: set[str] = set()  # of those, the ones live before a restart
        self._writers: dict[str, set[str]] = {}  # path -> tasks that changed it (this run)
        self.changed: trio.Event = trio.Event()  # set on every task change (wait_tasks)

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
        return [t for t in self.state.tasks.tasks.values() if t.owner == agent]

    def live_children(self, agent: str) -> list[TaskRecord]:
        """`agent`'s tasks that are live or about to be (a completed task whose owner
        wrote to it while it completed goes on to read that)."""
        return [t for t in self.owned_by(agent) if self._has_work(t)]

    def _has_work(self, task: TaskRecord) -> bool:
        if task.live:
            return True
        return task.state == "completed" and bool(self.mail_from_owner(task.task_id))

    def _runtime(self, agent: str) -> _Agent:
        runtime = self._agents.get(agent)
        if runtime is None:
            runtime = self._agents[agent] = _Agent()
        return runtime

    def _notify_change(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    # --- records ------------------------------------------------------------------------

    async def set_state(
        self, task_id: str, state: TaskState, *, by: str, reason: str = "", instance: str = ""
    ) -> None:
        await self.sink.emit(
            TaskChanged(
                agent=by, task=task_id, state=state, reason=reason, instance=instance, at=now_ms()
            ),
            durable=True,
        )
        self._notify_change()

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
        await self.sink.emit(
            MessagePosted(
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
            ),
            durable=True,
        )
        mail = self.state.mailbox.messages[message_id]
        self._notify_change()
        runtime = self._runtime(to)
        if RANK[mail.priority] >= RANK["urgent"]:
            runtime.wake.set()
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
        shown = _latest_progress_only(waiting)
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
        return yielded

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
        if definition is None:
            role, tools = MAIN, ToolRegistry([*_tools_of(s.base_tools), *main_tools(self)])
            max_rounds = s.max_rounds
        else:
            role = definition.name
            own = [
                Watched(t, self.note_writes) if t.name in WRITERS else t
                for t in _tools_of(s.base_tools)
                if t.name in definition.tools
            ]
            extra = subagent_tools(self, may_delegate=definition.may_delegate)
            tools = ToolRegistry([*own, *extra])
            max_rounds = definition.max_rounds
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
        )
        self._deps[agent] = deps
        return deps

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

    # --- the coordination tools (Coordinator) ---------------------------------------------

    async def delegate(self, owner: str, args: DelegateArgs, *, ref: str = "") -> ToolOutput:
        again = self.state.tasks.by_call(owner, ref)
        if again is not None:  # this call ran before a crash: the task exists
            return ToolOutput(f"delegated. {_handle(again)}")
        s = self.settings
        if args.agent_type not in s.definitions:
            known = ", ".join(s.definitions.names())
            raise ToolFailed(f"unknown agent_type {args.agent_type!r}; the types are: {known}")
        definition = s.definitions.get(args.agent_type)
        owner_task = self.state.tasks.get(owner)
        depth = 1 if owner_task is None else owner_task.depth + 1
        if depth > s.limits.max_depth:
            raise ToolFailed(
                f"delegation refused: it would be depth {depth}, past the limit of "
                f"{s.limits.max_depth}; do this work yourself"
            )
        existing = self.state.tasks.by_plan_ref(args.plan_ref)
        if existing is not None and existing.state not in ("failed", "cancelled"):
            return ToolOutput(
                f"plan task {args.plan_ref} is already task {existing.task_id}; no new task "
                f"was made. {_handle(existing)}"
            )
        scope: tuple[str, ...] | None
        if self._read_only(definition):
            scope = ()
        elif args.write_scope is not None:
            scope = tuple(args.write_scope)
            parent_scope = owner_task.write_scope if owner_task is not None else None
            if not scope_within(scope, parent_scope):
                raise ToolFailed(
                    f"write_scope {', '.join(scope)} is not inside your own write scope "
                    f"({', '.join(parent_scope or ())}); a subtask can only get part of it"
                )
        else:  # a child writes within its parent's scope, at most
            parent = owner_task.write_scope if owner_task is not None else None
            scope = tuple(parent) if parent is not None else None
        # The delegating task and those above it hand over part of their own work: only
        # other branches of the tree can conflict with it.
        other = self.state.tasks.scope_conflict(scope, exclude=self._ancestors(owner))
        if other is not None:
            theirs = ", ".join(other.write_scope or ()) or "anywhere"
            mine = ", ".join(scope) if scope else "anywhere"
            raise ToolFailed(
                f"scope_conflict: task {other.task_id} ({other.description}) is live and may "
                f"write {theirs}, which overlaps this task's write scope ({mine}); wait for "
                "it, or give write_scope paths that do not overlap"
            )
        if existing is not None:
            # A failed or cancelled plan task is retried as a new attempt of its record.
            await self.post(owner, existing.task_id, existing.task_id, "instruction", args.prompt)
            return ToolOutput(f"retrying plan task {args.plan_ref}: {_handle(existing)}")
        self._task_count += 1
        task_id = f"t{self._task_count}"
        # The context first, then the task, durable before the subagent starts: after a
        # crash there is either the task with its context, or no task (the delegating
        # call runs again and makes it; a context left alone is replaced).
        await self.sink.emit(
            AgentStarted(
                agent=task_id,
                role=definition.name,
                messages=(
                    SystemMessage(content=definition.prompt),
                    UserMessage(content=_task_message(task_id, args, scope)),
                ),
            )
        )
        await self.sink.emit(
            TaskCreated(
                agent=owner,
                task=task_id,
                agent_type=definition.name,
                description=args.description,
                owner_task=owner_task.task_id if owner_task else "",
                depth=depth,
                plan_ref=args.plan_ref,
                write_scope=scope,
                resume=definition.resume,
                ref=ref,
                at=now_ms(),
            ),
            durable=True,
        )
        self._notify_change()
        self.start_waiting()
        record = self.task(task_id)
        queued = "" if task_id in self._started else " (queued: the live-subagent limit is reached)"
        return ToolOutput(f"delegated{queued}. {_handle(record)}")

    async def send(self, sender: str, args: SendMessageArgs, *, ref: str = "") -> ToolOutput:
        again = self.state.mailbox.by_call(sender, ref)
        if again is None:
            task = self._own_task(sender, args.task)
            in_reply_to = args.in_reply_to
            if in_reply_to:
                asked = self.state.mailbox.messages.get(in_reply_to)
                if asked is None or asked.recipient != sender:
                    raise ToolFailed(f"no message {in_reply_to!r} to you to answer")
            elif args.kind == "answer":
                # An answer without a reference answers what parked the task (its question
                # or its report of being blocked), else its oldest open question.
                open_questions = sorted(
                    (m for m in self.state.mailbox.unanswered(sender) if m.task_id == task.task_id),
                    key=lambda m: (m.kind not in PARKING, m.posted_seq),
                )
                in_reply_to = open_questions[0].message_id if open_questions else ""
            revives = task.state in SETTLED
            again = await self.post(
                sender,
                task.task_id,
                task.task_id,
                args.kind,
                args.text,
                priority=args.priority,
                in_reply_to=in_reply_to,
                ref=ref,
            )
            if revives:
                return ToolOutput(
                    f"sent {again.message_id} to task {task.task_id}, which had "
                    f"{task.state}: it is revived with its context to act on it"
                )
        task = self.task(again.task_id)
        when = {
            "notify": "at its next turn",
            "urgent": "at its next step",
            "interrupt": "now, interrupting its model call",
        }[again.priority]
        return ToolOutput(
            f"sent {again.message_id} to task {task.task_id} ({task.state}); it reads it {when}"
        )

    async def cancel_tree(self, by: str, task_id: str, reason: str) -> ToolOutput:
        task = self._own_task(by, task_id)
        cancelled = await self.cancel(by, task.task_id, reason)
        if not cancelled:
            return ToolOutput(f"task {task_id} had already {task.state}; nothing to cancel")
        return ToolOutput("cancelled: " + ", ".join(cancelled))

    async def wait(self, agent: str, task_ids: list[str], seconds: float) -> ToolOutput:
        tasks = [self._own_task(agent, t) for t in task_ids] or self.live_children(agent)
        if not tasks:
            return ToolOutput("you have no live tasks to wait for")
        ids = {t.task_id for t in tasks}
        limit = min(seconds, self.settings.limits.wait_timeout)
        with trio.move_on_after(limit) as waited:
            while True:
                changed = self.changed
                if all(self._settled_for(agent, t) for t in ids):
                    break
                await changed.wait()
        lines = []
        if waited.cancelled_caught:
            lines.append(f"timed out after {limit:g} s; still running tasks are listed below")
        for task_id in sorted(ids, key=_task_order):
            lines.append(_status_line(self.task(task_id)))
        mail = [m for m in self.state.mailbox.undelivered(agent) if m.task_id in ids]
        if mail:
            lines.append(render(_latest_progress_only(mail), self.settings.limits.caps))
        return ToolOutput("\n".join(lines), delivers=tuple(m.message_id for m in mail))

    def _settled_for(self, agent: str, task_id: str) -> bool:
        """Whether `agent` waiting for the task should stop waiting: it finished, or it
        waits for an answer `agent` has not given yet."""
        task = self.task(task_id)
        if task.state in SETTLED:
            return not self._has_work(task)
        return self.waits_for(agent, task_id)

    def waits_for(self, agent: str, task_id: str) -> bool:
        """Whether the task is parked on a question or a block `agent` has not answered."""
        if self.task(task_id).state != "waiting_decision":
            return False
        return any(
            m.task_id == task_id and m.kind in PARKING for m in self.state.mailbox.unanswered(agent)
        )

    def describe_tasks(self, agent: str) -> str:
        tasks = self.owned_by(agent)
        if not tasks:
            return "you have delegated no tasks"
        lines = [_status_line(t) for t in tasks]
        open_questions = [m for m in self.state.mailbox.unanswered(agent)]
        for mail in open_questions:
            lines.append(f"unanswered: {mail.message_id} from task {mail.task_id}: {mail.summary}")
        return "\n".join(lines)

    async def report(
        self,
        agent: str,
        kind: str,
        summary: str,
        *,
        ref: str = "",
        data: dict[str, Any] | None = None,
        requires_ack: bool = False,
        ends_turn: bool = False,
        state: TaskState | None = None,
    ) -> ToolOutput:
        task = self.state.tasks.get(agent)
        if task is None:
            raise ToolFailed(f"{kind}: only a subagent working a task reports to an owner")
        mail = self.state.mailbox.by_call(agent, ref)
        if mail is not None and mail.posted_seq < task.revived_seq:
            # This call ran before a crash, and the task has moved on since (revived by a
            # follow-up): what it did then is done; it changes nothing now.
            return ToolOutput(f"already reported ({mail.message_id})")
        if mail is None:
            if kind == "completed":
                data = {**(data or {}), **self._check_files(agent, data or {})}
            mail = await self.post(
                agent,
                task.owner,
                agent,
                kind,  # type: ignore[arg-type]
                summary,
                data=data,
                requires_ack=requires_ack,
                ref=ref,
            )
        if state and task.state != state:
            await self.set_state(
                agent, state, by=agent, reason=summary if state != "completed" else ""
            )
        if ends_turn:
            self.end_turn(agent)
        said = {
            "progress": "progress reported to your owner",
            "completed": "completion handed to your owner; your task is complete and your "
            "turn ends here",
            "blocked": "your owner is told you are blocked; your turn ends, and its answer "
            "starts your next one",
            "decision_required": "question sent to your owner; your turn ends, and the "
            "answer starts your next one",
            "risk_alert": "risk reported to your owner; carry on",
            "direction_change_request": "proposal sent to your owner, who will answer; "
            "carry on meanwhile",
        }[kind]
        return ToolOutput(f"{said} ({mail.message_id})")

    def _read_only(self, definition: AgentDefinition) -> bool:
        """Whether an agent type changes nothing: every tool it has is read-only (a
        custom tool counts by its own flag)."""
        tools = self.settings.base_tools
        return all(
            (tool := tools.get(name)) is not None and tool.read_only for name in definition.tools
        )

    def _ancestors(self, agent: str) -> frozenset[str]:
        found = set()
        task = self.state.tasks.get(agent)
        while task is not None:
            found.add(task.task_id)
            task = self.state.tasks.get(task.owner)
        return frozenset(found)

    def _own_task(self, agent: str, task_id: str) -> TaskRecord:
        task = self.task(task_id)
        if task.owner != agent:
            raise ToolFailed(f"task {task_id} is not yours (its owner is {task.owner})")
        return task

    def _check_files(self, agent: str, data: dict[str, Any]) -> dict[str, Any]:
        """The files a subagent's own file tools changed, against those it lists."""
        changed = self.files_written(agent)
        listed = {_rel(p) for p in data.get("files_changed") or ()}
        return {
            "unlisted_changes": sorted(changed - listed),
            "unchanged_listed": sorted(listed - changed) if changed or listed else [],
        }

    async def note_writes(self, agent: str, paths: Sequence[str], tool: str) -> None:
        """A task's tool changed `paths`. A shell command's writes outside the task's
        scope, and a file changed by two live tasks, are reported to the owner (the file
        tools were refused outside the scope before they ran)."""
        task = self.state.tasks.get(agent)
        if task is None:
            return
        problems = []
        if tool == "shell":
            outside = [p for p in paths if not in_scope(p, task.write_scope)]
            if outside:
                problems.append(
                    "its shell command changed files outside its write scope: " + ", ".join(outside)
                )
        for path in paths:
            writers = self._writers.setdefault(_rel(path), set())
            others = sorted(
                w for w in writers if w != agent and (t := self.state.tasks.get(w)) and t.live
            )
            writers.add(agent)
            if others:
                problems.append(f"{path} was also changed by live task {', '.join(others)}")
        if problems:
            await self.post(agent, task.owner, agent, "risk_alert", "; ".join(problems))

    def files_written(self, agent: str) -> set[str]:
        """Workspace paths `agent`'s tools changed, from its context: the replies hold the
        write_file and edit_file calls and the results say which succeeded; a shell
        result names what its command changed (tools/watch.py)."""
        context = self.state.agents.get(agent)
        if context is None:
            return set()
        calls: dict[str, str] = {}
        written: set[str] = set()
        for message in context.messages:
            if isinstance(message, AssistantMessage):
                for call in message.tool_calls:
                    if call.name in ("write_file", "edit_file") and (path := _path_of(call)):
                        calls[call.id] = path
            elif isinstance(message, ToolResult):
                written_path = calls.pop(message.call_id, "")
                if written_path and message.status == "ok":
                    written.add(_rel(written_path))
                elif message.name == "shell":
                    written.update(changed_by_shell(message.content))
        return written

    # --- running and stopping ------------------------------------------------------------

    def start_waiting(self) -> None:
        """Start pending tasks while there is room under the live-subagent limit."""
        for task in list(self.state.tasks.tasks.values()):
            if len(self._started) >= self.settings.limits.max_live:
                return
            if task.state == "pending" and task.task_id not in self._started:
                self._started.add(task.task_id)
                self.runner.start(self, task.task_id)

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
        self.start_waiting()

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

    async def nudge(self, agent: str, text: str) -> None:
        await self.sink.emit(MessageAdded(agent=agent, message=UserMessage(content=text)))

    async def end_open_turn(self, agent: str, reason: TurnEndReason) -> None:
        context = self.state.agents.get(agent)
        if context is not None and context.turn_open:
            with trio.CancelScope(shield=True):
                await self.sink.emit(
                    TurnEnded(agent=agent, reason=reason, rounds=0),
                    durable=True,
                )


def _tools_of(registry: ToolRegistry) -> list[Any]:
    return [tool for name in registry.names() if (tool := registry.get(name)) is not None]


def _latest_progress_only(messages: list[Mail]) -> list[Mail]:
    latest: dict[str, str] = {}
    for mail in messages:
        if mail.kind == "progress":
            latest[mail.task_id] = mail.message_id
    return [m for m in messages if m.kind != "progress" or latest[m.task_id] == m.message_id]


def _handle(task: TaskRecord) -> str:
    return f"task_id={task.task_id} type={task.agent_type} state={task.state}"


def _task_message(task_id: str, args: DelegateArgs, scope: tuple[str, ...] | None) -> str:
    lines = [f"You are task {task_id}: {args.description}", "", args.prompt, ""]
    if scope is None:
        lines.append("Write scope: anywhere in the workspace.")
    elif not scope:
        lines.append("Write scope: none (this task only reads).")
    else:
        lines.append("Write scope (write only here): " + ", ".join(scope))
    if args.plan_ref:
        lines.append(f"Plan task: {args.plan_ref}")
    lines.append("When the task is done, call `complete` with your summary and evidence.")
    return "\n".join(lines)


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


def _task_order(task_id: str) -> tuple[int, str]:
    digits = task_id.lstrip("t")
    return (int(digits), "") if digits.isdigit() else (0, task_id)


def _status_line(task: TaskRecord) -> str:
    line = f"{task.task_id} [{task.state}] {task.agent_type}: {task.description}"
    if task.progress and task.state not in SETTLED:
        percent = f"{task.percent}% " if task.percent is not None else ""
        line += f" | progress: {percent}{task.progress}"
    if task.reason and task.state != "running":
        line += f" | {task.reason}"
    return line


def _path_of(call: ToolCall) -> str:
    try:
        args = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        return ""
    path = args.get("path") if isinstance(args, dict) else None
    return path if isinstance(path, str) else ""


def _rel(path: str) -> str:
    return path.strip().removeprefix("./")
