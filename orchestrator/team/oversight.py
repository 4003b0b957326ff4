"""The runtime around `assessment.assess`: it builds an agent's `Situation` from the
session state, journals the verdict (and its continuation note), runs the verification
commands, keeps the session's budgets, and is what the todo tools write through.

The decisions are `assessment.py`'s (a pure function); the records and folds are
`assessment.py`'s and `todos.py`'s. This module only gathers inputs and carries out
actions, so the main agent's loop and a subagent's loop act on a verdict the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import trio

from orchestrator.loop.assessment import (
    REPEATS,
    Assessed,
    Assessment,
    BlockedReported,
    Budgets,
    Situation,
    Spent,
    Verified,
    assess,
    continuation_note,
    over_budget,
)
from orchestrator.loop.plan import LIMITS, PlanLimits, replan_bound
from orchestrator.loop.todos import TodoList, TodosChanged
from orchestrator.messages import AssistantMessage
from orchestrator.prices.cost import Price, call_cost
from orchestrator.state.events import EventSink
from orchestrator.state.fold import SessionState
from orchestrator.state.tasks import LIVE
from orchestrator.team import queries
from orchestrator.team.definitions import Definitions
from orchestrator.team.port import SessionLike
from orchestrator.tools.base import AnyTool, ToolContext, ToolRegistry
from orchestrator.tools.shell import Shell, ShellArgs
from orchestrator.tools.workspace import Workspace

VERIFY_OUTPUT_CHARS = 4000
"""How much of a failing verification's output the agent is shown (head and tail)."""


@dataclass(frozen=True)
class Policy:
    """How turns are assessed: the session's configuration ([session] in the config)."""

    max_auto_continues: int = 10
    stall_rounds: int = 6
    verify: tuple[str, ...] = ()
    note: str = ""  # the continuation note's text ("" for the built-in one)
    serial: bool = False
    budgets: Budgets = field(default_factory=Budgets)
    interactive: bool = False
    prices: dict[str, Price] = field(default_factory=dict)  # for the cost budget
    plan_limits: PlanLimits = LIMITS  # the re-plans a plan task and the session may have


class Oversight:
    """Assessment, verification, budgets and todos for the agents of one team."""

    def __init__(
        self,
        session: SessionLike,
        sink: EventSink,
        policy: Policy,
        *,
        definitions: Definitions,
        workspace: Workspace,
        base_tools: ToolRegistry,
        session_id: str = "",
        session_directory: Path | None = None,
        redact: Callable[[str], str] = str,
    ) -> None:
        self._session = session
        self._sink = sink
        self.policy = policy
        self._definitions = definitions
        self._workspace = workspace
        self._base_tools = base_tools
        self._session_id = session_id
        self._session_directory = session_directory
        self._redact = redact
        self.started = trio.current_time()  # wall time counts per run

    # --- budgets ------------------------------------------------------------------------

    def spent(self) -> Spent:
        """What the session (every agent) has used. Calls of a model without a price
        count nothing toward the cost."""
        state = self._session.state
        tokens = sum(usage.total_tokens for usage in state.usage_by_model.values())
        cost = 0.0
        if self.policy.budgets.cost is not None:
            for model, usage in state.usage_by_model.items():
                cost += call_cost(self.policy.prices, model, usage) or 0.0
        return Spent(
            rounds=state.rounds,
            tokens=tokens,
            cost=cost,
            wall=trio.current_time() - self.started,
        )

    def over_budget(self) -> list[str]:
        budgets = self.policy.budgets
        if budgets == Budgets():
            return []
        return over_budget(budgets, self.spent())

    def wall_left(self) -> float:
        """Seconds left of the run's wall-time budget (`inf` without one): a wait ends
        there, not past it."""
        wall = self.policy.budgets.wall
        if wall is None:
            return math.inf
        return max(0.0, wall - (trio.current_time() - self.started))

    def budget_spent(self) -> str | None:
        """Before any agent's model call: why it is refused (the session's budget is
        spent), or None."""
        reasons = self.over_budget()
        return "; ".join(reasons) if reasons else None

    # --- assessment -------------------------------------------------------------------

    def turn_over(self, agent: str) -> bool:
        """Whether `agent`'s turn has nothing left: its last reply called no tool, or it
        ended its turn by reporting itself blocked, or it was stopped repeating a call."""
        context = self._session.state.agents[agent]
        last = context.messages[-1] if context.messages else None
        if isinstance(last, AssistantMessage) and not last.tool_calls:
            return True
        progress = queries.progress(self._session.state, agent)
        return bool(progress.blocked) or progress.call_repeats >= REPEATS

    def situation(self, agent: str, *, max_continues: int, must_report: bool) -> Situation:
        state = self._session.state
        children = queries.live_children(state, agent)
        if agent == queries.MAIN:  # and the tasks whose owners have ended
            children += queries.orphans(state)
        live = tuple(t.task_id for t in children)
        waiting = tuple(t for t in live if queries.waits_for(state, agent, t))
        policy = self.policy
        todos = state.todo_list(agent)
        return Situation(
            todos=todos,
            progress=queries.progress(state, agent),
            max_continues=max_continues,
            stall_rounds=policy.stall_rounds,
            live_tasks=live,
            waiting_on_it=waiting,
            spent=tuple(self.over_budget()),
            verify=self.verify_commands(agent) if not must_report else (),
            must_report=must_report,
            interactive=policy.interactive and not must_report,
            refused=tuple(state.refused) if not must_report else (),
            in_hand=_in_hand(state, todos),
            replans_spent=replans_spent(state, policy.plan_limits) if agent == queries.MAIN else (),
        )

    async def assess(
        self, agent: str, *, max_continues: int | None = None, must_report: bool = False
    ) -> Assessment:
        """Assess `agent`'s turn end and journal the verdict; a continuation carries its
        note into the agent's context in the same record."""
        limit = self.policy.max_auto_continues if max_continues is None else max_continues
        situation = self.situation(agent, max_continues=limit, must_report=must_report)
        verdict = assess(situation)
        note, count = "", 0
        if verdict.action == "continue_from_context":
            count = situation.progress.continues + 1
            note = continuation_note(
                situation.todos,
                verdict,
                count=count,
                limit=limit,
                live_tasks=situation.live_tasks,
                text=self.policy.note,
            )
        await self._sink.emit(
            Assessed(
                agent=agent,
                action=verdict.action,
                reasons=verdict.reasons,
                note=note,
                count=count,
                limit=limit if count else 0,
            ),
        )  # not waited for on disk: lost in a crash, it is made again from the same records
        return verdict

    # --- verification -----------------------------------------------------------------

    def verify_commands(self, agent: str) -> tuple[str, ...]:
        """What verifies `agent`'s work at its end: the session's verification, and for
        the main agent building a plan, each plan task's acceptance check after it."""
        plan = self._session.state.plans.approved if agent == queries.MAIN else None
        accepted = [t.acceptance for t in plan.tasks if t.acceptance] if plan else []
        return tuple(dict.fromkeys([*self.policy.verify, *accepted]))

    async def verify(self, agent: str) -> bool:
        """Run the session's verification commands in the workspace and journal the
        result; a failure's output goes back to the agent as a continuation."""
        commands = self.verify_commands(agent)
        code, output, failed = await self._run_checks(agent, commands)
        passed = not failed
        note = ""
        if not passed:
            progress = queries.progress(self._session.state, agent)
            note = (
                f"[verification failed] `{failed}` did not pass "
                f"(continuation {progress.continues + 1} of {self.policy.max_auto_continues}). "
                f"Fix the cause, then end your turn.\n{output}"
            )
        await self._record(agent, commands, code, output, note)
        return passed

    async def verify_in_call(self, agent: str, commands: tuple[str, ...]) -> str:
        """Run `commands` from inside one of the agent's calls (a subagent's `complete`,
        when its type has `verify`): journaled, and its failing output returned for the
        call's result ("" when they pass) rather than added to the context."""
        code, output, failed = await self._run_checks(agent, commands)
        await self._record(agent, commands, code, output, "", counts=False)
        return output if failed else ""

    async def _run_checks(self, agent: str, commands: tuple[str, ...]) -> tuple[int, str, str]:
        """Run the commands one after another through the shell tool (its sandbox and
        limits), stopping at the first failure: (exit code, output trimmed, the failed
        command or "" when all passed)."""
        shell = self._shell()
        context = ToolContext(
            workspace=self._workspace,
            agent=agent,
            session=self._session_id,
            session_directory=self._session_directory,
            call=f"verify.{self._session.state.seq}",
        )
        outputs = []
        code, failed = 0, ""
        for command in commands:
            output = await shell.run(ShellArgs(command=command), context)
            text = self._redact(output.content)
            outputs.append(f"$ {command}\n{text}")
            if output.status != "ok":
                # -1: timed out, or the command could not run
                code = output.exit_code if output.exit_code is not None else -1
                failed = command
                break
        return code, _trim("\n".join(outputs), VERIFY_OUTPUT_CHARS), failed

    async def _record(
        self,
        agent: str,
        commands: tuple[str, ...],
        code: int,
        output: str,
        note: str,
        *,
        counts: bool = True,
    ) -> None:
        await self._sink.emit(
            Verified(
                agent=agent,
                passed=code == 0,
                commands=commands,
                exit_code=code,
                output=output,
                note=note,
                counts=counts,
            ),
        )  # not waited for on disk: lost in a crash, the commands run again (checks)

    def _shell(self) -> AnyTool:
        tool = self._base_tools.get("shell")
        return tool if isinstance(tool, Shell) else Shell()

    # --- what the todo tools and the main agent's report_blocked call ------------------

    def todos(self, agent: str) -> TodoList:
        return self._session.state.todo_list(agent)

    def serial(self, agent: str) -> bool:
        definition = queries.definition(self._session.state, self._definitions, agent)
        if definition is not None and definition.serial:
            return True
        return self.policy.serial

    async def change_todos(self, record: TodosChanged) -> None:
        await self._sink.emit(record)

    async def report_blocked(self, agent: str, category: str, reason: str, *, ref: str) -> None:
        await self._sink.emit(
            BlockedReported(agent=agent, category=category, reason=reason, ref=ref)
        )


def _trim(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut ...]\n{text[-half:]}"


def replans_spent(state: SessionState, limits: PlanLimits) -> tuple[str, ...]:
    """The approved plan's tasks that failed or were cancelled and may be re-planned no
    more (their own bound, or the session's, is reached): why, and what a person can do."""
    plans = state.plans
    plan = plans.approved
    if plan is None or plans.replanning is not None:
        return ()
    found = []
    for task in plan.tasks:
        if state.tasks.plan_state(task.id) not in ("failed", "cancelled"):
            continue
        of_task = sum(1 for r in plans.replans if r.plan_task == task.id)
        why = replan_bound(of_task, len(plans.replans), limits)
        if why:
            found.append(
                f"plan task {task.id} {state.tasks.plan_state(task.id)} and cannot be "
                f"re-planned: {why}; resume with --message saying how to go on, or raise "
                "the limit in the [plan] table of the config"
            )
    return tuple(found)


def _in_hand(state: SessionState, todos: TodoList) -> frozenset[str]:
    """The todos linked to plan tasks whose task is live or waits for its dependencies."""
    working = LIVE | {"waiting_deps"}
    tasks = state.tasks
    return frozenset(
        item.id
        for item in todos.items.values()
        if item.plan_task and tasks.plan_state(item.plan_task) in working
    )
