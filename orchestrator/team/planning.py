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

An approval given in advance (`--approve`: the session's settings `approve` and
`approve_through`, journaled, so a resume keeps it) covers the versions the person could
see when giving it, and a later version only when it adds no task and no command to
them (`in_advance`); one that does is asked about, or waits for its own decision.
"""

from __future__ import annotations

from typing import Literal, assert_never

import msgspec

from orchestrator.agent import run_turn, settle_pending_calls
from orchestrator.errors import OrchestratorError
from orchestrator.loop.plan import Plan
from orchestrator.loop.plan_markdown import render
from orchestrator.loop.plan_run import diff, unseen
from orchestrator.loop.todos import TodoItem, TodosChanged, now_ms
from orchestrator.messages import SystemMessage, UserMessage
from orchestrator.state.events import AgentStarted
from orchestrator.state.plans import Plans, PlanVersion, Replan
from orchestrator.state.settings import SessionSettings
from orchestrator.state.tasks import SETTLED
from orchestrator.team.plan_host import PlanApprover, PlanVerdict
from orchestrator.team.prompts import builder_prompt, planner_prompt, with_instructions
from orchestrator.team.queries import BUILDER, MAIN, PLANNER
from orchestrator.team.runtime import Team

PLANNER_TURNS = 3
"""Turns the planner gets to submit a valid plan before the session fails."""


class PlanningFailed(OrchestratorError):
    """The planner did not produce a plan (it kept ending its turn without one)."""


class PlanningOutcome(msgspec.Struct, frozen=True):
    """Where planning stands: `build` (approved, the builder may run), `awaiting` (a
    plan waits for a decision nobody gave), `planned` (plan only: a plan was submitted)."""

    state: Literal["build", "awaiting", "planned"]
    version: int = 0
    why: str = ""  # awaiting: why no approval given in advance covers it, if one was given

    @property
    def awaits(self) -> str:
        """What a run stopped for the decision says of it."""
        why = f": {self.why}" if self.why else ""
        return f"plan v{self.version} awaits approval{why}"


async def run_planning(
    team: Team,
    approve: PlanApprover | None,
    *,
    goal: str,
    plan_only: bool = False,
) -> PlanningOutcome:
    """Plan until a plan is approved and the builder has started (`build`), or until a
    plan waits for a decision nobody gives now. Picks up wherever a crash left it."""
    outcome = await _until_approved(
        team, approve, planner=PLANNER, since=0, brief=goal, plan_only=plan_only
    )
    approved = team.state.plans.approved
    if outcome.state == "build" and approved is not None and MAIN not in team.state.agents:
        await start_builder(team, goal, approved)
    return outcome


async def replan(team: Team, approve: PlanApprover | None, *, goal: str) -> PlanningOutcome:
    """The re-plan under way: its planner, in a fresh context holding the plan, its
    status and the reason, writes the next version, decided like the first; once
    approved it is handed to the builder (`hand_over`)."""
    plans = team.state.plans
    request = plans.replanning
    if request is None:
        return PlanningOutcome("build", plans.seeded)
    old = plans.approved
    assert old is not None  # the fold refuses a re-plan without an approved plan
    brief = replan_brief(goal, old, request, _states(team, old))
    outcome = await _until_approved(
        team, approve, planner=request.planner, since=request.seq, brief=brief
    )
    if outcome.state == "build":
        await hand_over(team)
    return outcome


async def _until_approved(
    team: Team,
    approve: PlanApprover | None,
    *,
    planner: str,
    since: int,
    brief: str,
    plan_only: bool = False,
) -> PlanningOutcome:
    """Run `planner` and ask for decisions until a version submitted after record
    `since` is approved."""
    plans = team.state.plans
    while True:
        approved = plans.approved_version
        if approved is not None and approved.submitted_seq > since:
            return PlanningOutcome("build", approved.version)
        pending = plans.pending
        if pending is None:
            await _plan(team, planner, brief)
            continue
        if plan_only:
            return PlanningOutcome("planned", pending.version)
        verdict, why = in_advance(team.seat.settings, plans, pending)
        if verdict is None and approve is not None:
            # Whoever is asked is told why --approve did not decide it (not journaled).
            shown = [*pending.warnings, why] if why else pending.warnings
            verdict = await approve(msgspec.structs.replace(pending, warnings=shown))
        if verdict is None:
            return PlanningOutcome("awaiting", pending.version, why)
        await team.planning.decide(pending, verdict)
        # (A rejection's feedback reaches the planner as `_plan` starts its next turn.)


def in_advance(
    settings: SessionSettings, plans: Plans, version: PlanVersion
) -> tuple[PlanVerdict | None, str]:
    """The approval of `version` that the session's settings give in advance (None
    when they give none), and, when they give one that does not cover it, why not. `all`
    covers every version; `seen`, the versions up to `approve_through` and a later one
    that adds no task and no command to those and to every version approved since."""
    match settings.approve:
        case "all":
            return PlanVerdict("approved", by="--approve all"), ""
        case "seen" if version.version <= settings.approve_through:
            return PlanVerdict("approved", by="--approve"), ""
        case "seen":
            seen = [
                v.plan
                for v in plans.versions
                if v.decision == "approved"
                or (v.version <= settings.approve_through and v.decision is None)
            ]
            added = unseen(version.plan, seen)
            if not added:
                return PlanVerdict("approved", by="--approve"), ""
            return None, (
                f"it adds {', '.join(added)}, which --approve (given for plan "
                f"v{settings.approve_through}) does not cover"
            )
        case "":
            return None, ""
        case other:
            assert_never(other)


async def _plan(team: Team, planner: str, brief: str) -> None:
    """Run the planner's turns until it has submitted a plan."""
    state = team.state
    if planner not in state.agents:
        deps = team.turn_deps(planner)
        await team.sink.emit(
            AgentStarted(
                agent=planner,
                role=PLANNER,
                messages=(
                    SystemMessage(content=planner_prompt(deps.tools.names())),
                    UserMessage(content=brief),
                ),
            )
        )
    context = state.agents[planner]
    deps = team.turn_deps(planner)
    await settle_pending_calls(context, deps)
    latest = state.plans.latest
    if latest is not None and latest.decision == "rejected":
        # The person's feedback, once, even when a crash came between it and the planner.
        note = rejection_note(latest)
        if not any(isinstance(m, UserMessage) and m.content == note for m in context.messages):
            await team.port.turns.nudge(planner, note)
    for _ in range(PLANNER_TURNS):
        if state.plans.pending is not None:
            return
        await run_turn(context, deps)
        if state.plans.pending is not None:
            return
        await team.port.turns.nudge(
            planner,
            "Your turn ended without a plan. Call submit_plan with the whole plan; fix "
            "whatever it reports and call it again.",
        )
    raise PlanningFailed(f"the planner ended {PLANNER_TURNS} turns without submitting a plan")


def rejection_note(version: PlanVersion) -> str:
    """What the planner reads of a rejection of `version`."""
    return (
        f"Plan v{version.version} was rejected. The person's feedback: "
        f"{version.feedback or '(none given)'}\nRevise the plan and submit it again."
    )


def _todos(plan: Plan) -> tuple[TodoItem, ...]:
    """One todo per plan task, linked to it (its status follows the task's record)."""
    return tuple(
        TodoItem(
            id=task.id,
            content=task.title,
            blocked_by=task.depends_on,
            plan_task=task.id,
            created=now_ms(),
        )
        for task in plan.tasks
    )


async def start_builder(team: Team, goal: str, plan: Plan) -> None:
    """The builder's context, from the approved plan: its todos first, then its
    context, so that a crash between them starts both again."""
    version = team.state.plans.approved_version
    await team.sink.emit(
        TodosChanged(
            agent=MAIN,
            replace=True,
            goal=plan.goal,
            items=_todos(plan),
            plan_version=version.version if version is not None else 0,
        )
    )
    deps = team.turn_deps(MAIN)
    types = [(d.name, d.description) for d in team.run.definitions]
    await team.sink.emit(
        AgentStarted(
            agent=MAIN,
            role=BUILDER,
            messages=(
                SystemMessage(
                    content=with_instructions(
                        builder_prompt(deps.tools.names(), types), team.run.instructions
                    )
                ),
                UserMessage(content=builder_brief(goal, plan)),
            ),
        ),
        durable=True,
    )


async def hand_over(team: Team) -> None:
    """Hand an approved version the builder does not have yet to it: tasks it drops or
    changes that are still live or waiting are cancelled, the builder is told what
    changed, and its plan todos become the new version's (kept tasks keep their state:
    a todo's status is its task's). The todos last: once they are folded the handover
    is done, so a crash before repeats it whole (the message may come twice, never not
    at all)."""
    state = team.state
    plans = state.plans
    version = plans.approved_version
    if version is None or version.version <= plans.seeded or MAIN not in state.agents:
        return
    old = plans.versions[plans.seeded - 1].plan if plans.seeded else Plan(goal=version.plan.goal)
    change = diff(old, version.plan)
    reason = f"plan v{version.version} changed or dropped it"
    for plan_ref in (*change.changed, *change.dropped):
        task = state.tasks.by_plan_ref(plan_ref)
        if task is not None and task.state not in SETTLED:
            await team.cancel(MAIN, task.task_id, reason)
    fresh = {*change.added, *change.changed}
    news = msgspec.structs.replace(
        version.plan, constraints=(), tasks=tuple(t for t in version.plan.tasks if t.id in fresh)
    )
    await team.port.turns.nudge(
        MAIN,
        f"Plan v{version.version} is approved ({change.describe()}). Your plan todos are "
        "its tasks now; delegate each that has no completed task, with plan_ref set to its "
        "id (a cancelled or failed one is retried). The new and changed tasks:\n\n" + render(news),
    )
    linked = {i.id for i in state.todo_list(MAIN).items.values() if i.plan_task}
    own = [i for i in state.todo_list(MAIN).items.values() if i.id not in linked]
    await team.sink.emit(
        TodosChanged(
            agent=MAIN,
            replace=True,
            goal=version.plan.goal,
            items=(*_todos(version.plan), *own),
            plan_version=version.version,
        )
    )


def _states(team: Team, plan: Plan) -> dict[str, str]:
    """Each plan task's state: its latest task's, or "" when not delegated."""
    return {task.id: team.state.tasks.plan_state(task.id) for task in plan.tasks}


def replan_brief(goal: str, plan: Plan, request: Replan, states: dict[str, str]) -> str:
    """A re-planner's first message: the goal, the plan with each task's state, what
    went wrong, and what a new version must keep."""
    lines = [
        f"Goal: {goal}",
        "",
        f"The builder sent plan task {request.plan_task} back for re-planning: {request.reason}",
        "",
        "Each task's state now:",
        *(f"- {tid}: {state or 'not delegated'}" for tid, state in states.items()),
        "",
        "Submit the next version of the whole plan with submit_plan: keep every completed "
        "task exactly as it is (same id and fields); change, drop or add the others. Tasks "
        "outside what you change keep running meanwhile.",
        "",
        render(plan),
    ]
    return "\n".join(lines)


def builder_brief(goal: str, plan: Plan) -> str:
    """The builder's first message: the goal and the approved plan."""
    return (
        f"Goal: {goal}\n\nThe approved plan follows. Each of its tasks is one of your "
        "todos, and its status follows the task you delegate for it: delegate each task "
        "with plan_ref set to its id (its write scope and dependencies come from the plan; "
        "a task whose dependencies have not completed waits and starts by itself), answer "
        "what your tasks ask, and finish when every task has completed. If a task fails "
        "or is blocked in a way the plan cannot absorb, `replan` sends it back to a planner "
        "while the rest goes on.\n\n" + render(plan)
    )
