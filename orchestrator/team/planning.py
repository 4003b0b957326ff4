"""Plan handoff: the planner writes a plan, a person (or `--approve`, or a program)
decides on it, and the builder starts from the approved plan.

Planner and builder are one session. The planner is the agent `planner` (role
`planner`: read-only tools and `submit_plan`); the builder is the main agent (role
`builder`), whose context starts at the approval, holding the goal and the plan, not the
planner's conversation. Each plan task is one of the builder's todos, linked to it: its
status follows the task record of the plan task (state/fold.py), so the plan, the todo
list and the task tree cannot disagree.

Only an explicit approval (`plan_decided`, `approved`) starts the builder: an approver
that gives no answer (EOF, a headless run without `--approve`), Ctrl+C or a crash at
the prompt leaves the plan undecided, and the session asks again when it resumes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from orchestrator.agent import run_turn, settle_pending_calls
from orchestrator.errors import OrchestratorError
from orchestrator.loop.plan import Plan
from orchestrator.loop.plan_markdown import render
from orchestrator.loop.todos import TodoItem, TodosChanged, now_ms
from orchestrator.messages import SystemMessage, UserMessage
from orchestrator.state.events import AgentStarted
from orchestrator.team.plan_host import PlanApprover
from orchestrator.team.prompts import builder_prompt, planner_prompt
from orchestrator.team.queries import BUILDER, MAIN, PLANNER
from orchestrator.team.runtime import Team

PLANNER_TURNS = 3
"""Turns the planner gets to submit a valid plan before the session fails."""


class PlanningFailed(OrchestratorError):
    """The planner did not produce a plan (it kept ending its turn without one)."""


@dataclass(frozen=True)
class PlanningOutcome:
    """Where planning stands: `build` (approved, the builder may run), `awaiting` (a
    plan waits for a decision nobody gave), `planned` (plan only: a plan was submitted)."""

    state: Literal["build", "awaiting", "planned"]
    version: int = 0


async def run_planning(
    team: Team,
    approve: PlanApprover | None,
    *,
    goal: str,
    plan_only: bool = False,
) -> PlanningOutcome:
    """Plan until a plan is approved and the builder has started (`build`), or until a
    plan waits for a decision nobody gives now. Picks up wherever a crash left it."""
    plans = team.state.plans
    while True:
        approved = plans.approved_version
        if approved is not None:
            if MAIN not in team.state.agents:
                await start_builder(team, goal, approved.plan)
            return PlanningOutcome("build", approved.version)
        pending = plans.pending
        if pending is None:
            await _plan(team, goal)
            continue
        if plan_only:
            return PlanningOutcome("planned", pending.version)
        verdict = await approve(pending) if approve is not None else None
        if verdict is None:
            return PlanningOutcome("awaiting", pending.version)
        await team.planning.decide(pending, verdict)
        if verdict.decision == "rejected":
            await team.turns.nudge(
                PLANNER,
                f"Plan v{pending.version} was rejected. The person's feedback: "
                f"{verdict.feedback or '(none given)'}\nRevise the plan and submit it again.",
            )


async def _plan(team: Team, goal: str) -> None:
    """Run the planner's turns until it has submitted a plan."""
    state = team.state
    if PLANNER not in state.agents:
        deps = team.turn_deps(PLANNER)
        await team.sink.emit(
            AgentStarted(
                agent=PLANNER,
                role=PLANNER,
                messages=(
                    SystemMessage(content=planner_prompt(deps.tools.names())),
                    UserMessage(content=goal),
                ),
            )
        )
    context = state.agents[PLANNER]
    deps = team.turn_deps(PLANNER)
    await settle_pending_calls(context, deps)
    for _ in range(PLANNER_TURNS):
        if state.plans.pending is not None:
            return
        await run_turn(context, deps)
        if state.plans.pending is not None:
            return
        await team.turns.nudge(
            PLANNER,
            "Your turn ended without a plan. Call submit_plan with the whole plan; fix "
            "whatever it reports and call it again.",
        )
    raise PlanningFailed(f"the planner ended {PLANNER_TURNS} turns without submitting a valid plan")


async def start_builder(team: Team, goal: str, plan: Plan) -> None:
    """The builder's context, from the approved plan: its todos first (one per plan
    task, linked), then its context, so that a crash between them starts both again."""
    items = tuple(
        TodoItem(
            id=task.id,
            content=task.title,
            blocked_by=task.depends_on,
            plan_task=task.id,
            created=now_ms(),
        )
        for task in plan.tasks
    )
    await team.sink.emit(TodosChanged(agent=MAIN, replace=True, goal=plan.goal, items=items))
    deps = team.turn_deps(MAIN)
    types = [(d.name, d.description) for d in team.settings.definitions]
    await team.sink.emit(
        AgentStarted(
            agent=MAIN,
            role=BUILDER,
            messages=(
                SystemMessage(content=builder_prompt(deps.tools.names(), types)),
                UserMessage(content=builder_brief(goal, plan)),
            ),
        ),
        durable=True,
    )


def builder_brief(goal: str, plan: Plan) -> str:
    """The builder's first message: the goal and the approved plan."""
    return (
        f"Goal: {goal}\n\nThe approved plan follows. Each of its tasks is one of your "
        "todos, and its status follows the task you delegate for it: delegate each task "
        "with plan_ref set to its id (its write scope and dependencies come from the plan; "
        "a task whose dependencies have not completed waits and starts by itself), answer "
        "what your tasks ask, and finish when every task has completed.\n\n" + render(plan)
    )
