"""Delegation: what the coordination tools do (`delegate`, `send_message`,
`cancel_task`, `wait_tasks`, `list_tasks`, and a subagent's reports), on top of the
team's postbox and scheduler, and the checks on what a task writes.

`Delegation` is the `Coordinator` the tools in `tools/coordination.py` call. It keeps no
state of its own: it reads the folded registry and mailbox and changes them only through
the postbox and the scheduler (records they emit), so it is the same after a restart;
which task changed which file in this run is `writes.py`'s.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson
import trio

from orchestrator.errors import ToolFailed
from orchestrator.loop.deps import decide
from orchestrator.loop.plan import PlanTask
from orchestrator.messages import SystemMessage, UserMessage
from orchestrator.state.events import AgentStarted, Event, EventSink
from orchestrator.state.fold import SessionState
from orchestrator.state.mailtext import latest_progress_only, render
from orchestrator.state.tasks import (
    SETTLED,
    TaskCreated,
    TaskRecord,
    now_ms,
    scope_within,
)
from orchestrator.team import queries
from orchestrator.team.definitions import AgentDefinition
from orchestrator.team.oversight import Oversight
from orchestrator.team.port import SessionLike
from orchestrator.team.postbox import Changes, Postbox
from orchestrator.team.reports import Reports
from orchestrator.team.scheduler import Scheduler
from orchestrator.team.sending import Sending
from orchestrator.team.settings import Limits, RunSettings
from orchestrator.team.writes import Writes
from orchestrator.tools.base import ToolOutput
from orchestrator.tools.coordination import DelegateArgs


class Delegation:
    """The coordination tools' side of a team."""

    def __init__(
        self,
        run: RunSettings,
        limits: Limits,
        session: SessionLike,
        sink: EventSink,
        changes: Changes,
        postbox: Postbox,
        scheduler: Scheduler,
        oversight: Oversight,
        writes: Writes,
    ) -> None:
        self._run = run
        self._limits = limits
        self._session = session
        self._sink = sink
        self._changes = changes
        self._postbox = postbox
        self._scheduler = scheduler
        self._oversight = oversight
        self._writes = writes
        # A subagent's reports (the tools' `Coordinator.report`) are `Reports`' to make,
        # and an owner's messages to its tasks `Sending`'s.
        self.report = Reports(run, session, postbox, scheduler, oversight, writes).report
        self._sending = Sending(session, postbox, scheduler)
        self.send = self._sending.send

    @property
    def _state(self) -> SessionState:
        return self._session.state

    def _task(self, task_id: str) -> TaskRecord:
        return queries.task(self._state, task_id)

    async def delegate(self, owner: str, args: DelegateArgs, *, ref: str = "") -> ToolOutput:
        again = self._state.tasks.by_call(owner, ref)
        if again is not None:  # this call ran before a crash: the task exists
            return ToolOutput(f"delegated. {_handle(again)}")
        definitions = self._run.definitions
        if args.agent_type not in definitions:
            known = ", ".join(definitions.names())
            raise ToolFailed(f"unknown agent_type {args.agent_type!r}; the types are: {known}")
        definition = definitions.get(args.agent_type)
        owner_task = self._state.tasks.get(owner)
        depth = 1 if owner_task is None else owner_task.depth + 1
        if depth > self._limits.max_depth:
            raise ToolFailed(
                f"delegation refused: it would be depth {depth}, past the limit of "
                f"{self._limits.max_depth}; do this work yourself"
            )
        plan = self._state.plans.task(args.plan_ref)
        existing = self._state.tasks.by_plan_ref(args.plan_ref)
        if existing is not None and existing.state not in ("failed", "cancelled"):
            return ToolOutput(
                f"plan task {args.plan_ref} is already task {existing.task_id}; no new task "
                f"was made. {_handle(existing)}"
            )
        # Every check before the first record: a refused call leaves nothing behind.
        after, after_plan = queries.resolve_after(self._state, owner, args.after, args.plan_ref)
        scope = self._scope(definition, owner_task, args, plan)
        # (A retry keeps the dependencies its task was delegated with.)
        waits_for = (
            (after, after_plan) if existing is None else (existing.after, existing.after_plan)
        )
        conflict = self._conflict(owner, scope, waits_for, serialise=plan is not None)
        if existing is not None:
            return await self._retry(owner, existing, args)
        cycle = queries.cycle_closed(self._state, args.plan_ref, after, after_plan)
        if cycle:
            raise ToolFailed(
                f"delegation refused: plan task {args.plan_ref} waiting for "
                f"{', '.join((*after, *after_plan))} would close a dependency cycle: "
                f"{' -> '.join(cycle)} (each waits for the next to complete, so none would "
                "ever start); leave the task that closes it out of after"
            )
        verdict = decide(queries.dependencies(self._state, after, after_plan), conflict=conflict)
        if verdict.action == "cancel":
            raise ToolFailed(
                f"delegation refused: {verdict.reason}, so this task could never start; "
                "revive or retry it first, or leave it out of after"
            )
        waits = verdict.action == "wait"
        with self._scheduler.new_task_id() as task_id:
            # The context first, then the task, before the subagent starts: after a crash
            # there is either the task with its context, or no task (the delegating call
            # runs again and makes it; a context left alone is replaced). The journal's
            # order is enough: the subagent's own records come after these, and its first
            # side effect waits for its durable start, which covers them.
            await self._emit_together(
                AgentStarted(
                    agent=task_id,
                    role=definition.name,
                    messages=(
                        SystemMessage(content=definition.prompt),
                        UserMessage(
                            content=_task_message(task_id, args, scope, (*after, *after_plan), plan)
                        ),
                    ),
                ),
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
                    deadline=now_ms() + round(args.deadline_seconds * 1000)
                    if args.deadline_seconds
                    else 0,
                    round_budget=args.round_budget or 0,
                    token_budget=args.token_budget or 0,
                    at=now_ms(),
                    after=after,
                    after_plan=after_plan,
                    serialise=plan is not None,
                    state="waiting_deps" if waits else "pending",
                ),
            )
        self._changes.notify()
        if waits:
            # A dependency may have completed while the records were on their way.
            await self._scheduler.check(task_id)
        else:
            self._scheduler.enqueue(task_id)
        record = self._task(task_id)
        if record.state == "waiting_deps":
            return ToolOutput(f"delegated; {verdict.reason}. {_handle(record)}")
        queued = ""
        if self._scheduler.is_running(task_id):
            pass
        elif self._scheduler.waits_for_role(task_id):
            limit = definition.max_live
            queued = f" (queued: {limit} {record.agent_type} task(s) run, its type's limit)"
        else:
            queued = " (queued: the live-subagent limit is reached)"
        return ToolOutput(f"delegated{queued}. {_handle(record)}")

    def _scope(
        self,
        definition: AgentDefinition,
        owner_task: TaskRecord | None,
        args: DelegateArgs,
        plan: PlanTask | None,
    ) -> tuple[str, ...] | None:
        """The task's write scope: nothing for a read-only type; else the one given (or
        its plan task's), inside its owner's; else its owner's."""
        if self._read_only(definition):
            return ()
        given = args.write_scope
        if given is None and plan is not None:
            given = list(plan.write_scope)
        parent_scope = owner_task.write_scope if owner_task is not None else None
        if given is None:  # a child writes within its parent's scope, at most
            return tuple(parent_scope) if parent_scope is not None else None
        scope = tuple(given)
        if not scope_within(scope, parent_scope):
            raise ToolFailed(
                f"write_scope {', '.join(scope)} is not inside your own write scope "
                f"({', '.join(parent_scope or ())}); a subtask can only get part of it"
            )
        return scope

    def _conflict(
        self,
        owner: str,
        scope: tuple[str, ...] | None,
        waits_for: tuple[Iterable[str], Iterable[str]],
        *,
        serialise: bool,
    ) -> str:
        """Refuse a scope that overlaps a live task's; but a plan task (`serialise`) waits
        for another live plan task instead: returns the one it waits for ("" for none)."""
        # The delegating task and those above it hand over part of their own work: only
        # other branches of the tree can conflict with it. The tasks it waits for will
        # have completed before it starts.
        exclude = queries.ancestors(self._state, owner)
        tasks = self._state.tasks
        if tasks.scope_conflict(scope, exclude=exclude) is not None:  # (rare: then walk)
            exclude |= queries.upstream(self._state, *waits_for)
        other = tasks.scope_conflict(scope, exclude=exclude, serialised=not serialise)
        if other is not None:
            theirs = ", ".join(other.write_scope or ()) or "anywhere"
            mine = ", ".join(scope) if scope else "anywhere"
            raise ToolFailed(
                f"scope_conflict: task {other.task_id} ({other.description}) is live and may "
                f"write {theirs}, which overlaps this task's write scope ({mine}); wait for "
                "it, or give write_scope paths that do not overlap"
            )
        other = tasks.scope_conflict(scope, exclude=exclude) if serialise else None
        return other.task_id if other is not None else ""

    async def _retry(self, owner: str, existing: TaskRecord, args: DelegateArgs) -> ToolOutput:
        """A failed or cancelled plan task is retried as a new attempt of its record: the
        prompt, as an instruction, revives it (at once, or once its dependencies, the
        ones it was delegated with, have completed)."""
        verdict = queries.readiness(self._state, existing)
        if verdict.action == "cancel":
            raise ToolFailed(
                f"retry refused: plan task {args.plan_ref} (task {existing.task_id}) could "
                f"never start: {verdict.reason}; retry that first"
            )
        await self._sending.write(owner, existing, "instruction", args.prompt)
        record = self._task(existing.task_id)
        waits = f"; {verdict.reason}" if record.state == "waiting_deps" else ""
        return ToolOutput(f"retrying plan task {args.plan_ref}{waits}: {_handle(record)}")

    async def _emit_together(self, *events: Event) -> None:
        """Emit the records of one transition: each is encoded first, so one that cannot
        be stored fails the call before any of them is journaled."""
        for event in events:
            record = event.record()
            if record is not None:
                orjson.dumps(record.journal_body())  # what the journal does with it
        for event in events:
            await self._sink.emit(event)

    async def cancel_tree(self, by: str, task_id: str, reason: str) -> ToolOutput:
        task = self._own_task(by, task_id)
        cancelled = await self._scheduler.cancel(by, task.task_id, reason)
        if not cancelled:
            return ToolOutput(f"task {task_id} had already {task.state}; nothing to cancel")
        return ToolOutput("cancelled: " + ", ".join(cancelled))

    async def wait(self, agent: str, task_ids: list[str], seconds: float) -> ToolOutput:
        tasks = [self._own_task(agent, t) for t in task_ids] or queries.live_children(
            self._state, agent
        )
        if not tasks:
            return ToolOutput("you have no live tasks to wait for")
        ids = {t.task_id for t in tasks}
        left = self._oversight.wall_left()
        limit = min(seconds, self._limits.wait_timeout, left)
        with trio.move_on_after(limit) as waited:
            while True:
                changed = self._changes.event
                if all(self._settled_for(agent, t) for t in ids):
                    break
                await changed.wait()
        lines = []
        if waited.cancelled_caught and limit == left:
            lines.append(
                f"stopped waiting after {limit:g} s: the session's time budget is spent; "
                "still running tasks are listed below"
            )
        elif waited.cancelled_caught:
            lines.append(f"timed out after {limit:g} s; still running tasks are listed below")
        for task_id in sorted(ids, key=_task_order):
            lines.append(self._status_line(self._task(task_id)))
        mail = [m for m in self._state.mailbox.undelivered(agent) if m.task_id in ids]
        if mail:
            lines.append(render(latest_progress_only(mail), self._limits.caps))
        return ToolOutput("\n".join(lines), delivers=tuple(m.message_id for m in mail))

    def _settled_for(self, agent: str, task_id: str) -> bool:
        """Whether `agent` waiting for the task should stop waiting: it finished, or it
        waits for an answer `agent` has not given yet."""
        task = self._task(task_id)
        if task.state in SETTLED:
            return not queries.has_work(self._state, task)
        return queries.waits_for(self._state, agent, task_id)

    def describe_tasks(self, agent: str) -> str:
        tasks = self._state.tasks.children(agent)
        if not tasks:
            return "you have delegated no tasks"
        lines = [self._status_line(t) for t in tasks]
        open_questions = [m for m in self._state.mailbox.unanswered(agent)]
        for mail in open_questions:
            lines.append(f"unanswered: {mail.message_id} from task {mail.task_id}: {mail.summary}")
        return "\n".join(lines)

    def _read_only(self, definition: AgentDefinition) -> bool:
        """Whether an agent type changes nothing: every tool it has is read-only (a
        custom tool counts by its own flag)."""
        tools = self._run.all_tools
        return all(
            (tool := tools.get(name)) is not None and tool.read_only for name in definition.tools
        )

    def _status_line(self, task: TaskRecord) -> str:
        """One line of `list_tasks` or `wait_tasks`: a waiting task says what it still
        waits for, as it stands now."""
        waits = ""
        if task.state == "waiting_deps":
            verdict = queries.readiness(self._state, task)
            waits = verdict.reason if verdict.action == "wait" else ""
        return _status_line(task, waits)

    def _own_task(self, agent: str, task_id: str) -> TaskRecord:
        return queries.own_task(self._state, agent, task_id)


def _handle(task: TaskRecord) -> str:
    return f"task_id={task.task_id} type={task.agent_type} state={task.state}"


def _task_message(
    task_id: str,
    args: DelegateArgs,
    scope: tuple[str, ...] | None,
    after: tuple[str, ...],
    plan: PlanTask | None = None,
) -> str:
    lines = [f"You are task {task_id}: {args.description}", "", args.prompt, ""]
    if scope is None:
        lines.append("Write scope: anywhere in the workspace.")
    elif not scope:
        lines.append("Write scope: none (this task only reads).")
    else:
        lines.append("Write scope (write only here): " + ", ".join(scope))
    if plan is not None:  # the plan's words, whatever the delegating prompt left out
        lines.append(f"Plan task {plan.id}: {plan.title}")
        if plan.description:
            lines += ["", plan.description, ""]
        if plan.acceptance:
            lines.append(
                f"Acceptance check (runs when you call complete; it must pass): {plan.acceptance}"
            )
    elif args.plan_ref:
        lines.append(f"Plan task: {args.plan_ref}")
    if after:
        lines.append("It starts after these have completed: " + ", ".join(after))
    lines.append("When the task is done, call `complete` with your summary and evidence.")
    return "\n".join(lines)


def _task_order(task_id: str) -> tuple[int, str]:
    digits = task_id.lstrip("t")
    return (int(digits), "") if digits.isdigit() else (0, task_id)


def _status_line(task: TaskRecord, waits: str = "") -> str:
    line = f"{task.task_id} [{task.state}] {task.agent_type}: {task.description}"
    if task.progress and task.state not in SETTLED:
        percent = f"{task.percent}% " if task.percent is not None else ""
        line += f" | progress: {percent}{task.progress}"
    if waits:
        line += f" | {waits}"
    elif task.reason and task.state != "running":
        line += f" | {task.reason}"
    return line
