"""Plans from Python: the command line's `plan`, `execute` and approval as calls on an
open session (docs/plans.md#from-python).

    async with orc.open_session(root, session_id, warn=print) as live:
        result = await orc.plan(live, settings)           # the planner's plan, not built
        print(orc.render_plan(live.state.plans.latest.plan))
        result = await orc.approve(live, settings)        # approve it and build it

Each returns `drive`'s `RunResult`: a plan waiting for a decision is `blocked` ("plan v1
awaits approval"). Only an explicit approval builds: `approve` approves the waiting
version; `execute` builds with `settings.approve_plan` (or approves with `approve=True`),
starting from `plan` when the session has none yet; `RunSettings.approve_plan` is the
callback a program decides with (`PlanVersion` in, `PlanVerdict` or None out).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from orchestrator.errors import ConfigError
from orchestrator.loop.plan import Plan, check
from orchestrator.loop.todo_changes import write
from orchestrator.loop.todos import TodoItem, TodoList, TodosChanged, now_ms
from orchestrator.session.live import LiveSession
from orchestrator.state.plans import PlanVersion
from orchestrator.team.drive import RunResult, drive
from orchestrator.team.plan_host import PlanVerdict
from orchestrator.team.queries import MAIN
from orchestrator.team.settings import RunSettings


async def plan(live: LiveSession, settings: RunSettings) -> RunResult:
    """Run the planner until it has submitted a plan, and stop (`blocked`: the plan
    awaits approval). The plan is `live.state.plans.latest`, and in `plan.md`."""
    return await drive(live, dataclasses.replace(settings, plan=True, plan_only=True))


async def approve(
    live: LiveSession, settings: RunSettings, *, feedback: str = "", reject: bool = False
) -> RunResult:
    """Decide on the plan that waits: approve it (journaled `by="library"`) and build it,
    or with `reject=True` send `feedback` back to the planner, which plans again (and
    the run stops at its next version, for another decision)."""
    if live.state.plans.pending is None:
        raise ConfigError("no plan of this session waits for a decision")
    decided = False

    async def once(version: PlanVersion) -> PlanVerdict | None:
        nonlocal decided
        if decided:
            return None  # the next version (after a rejection) waits for the next call
        decided = True
        if reject:
            return PlanVerdict("rejected", feedback=feedback, by="library")
        return PlanVerdict("approved", by="library")

    return await drive(live, dataclasses.replace(settings, plan=True, approve_plan=once))


async def execute(
    live: LiveSession, settings: RunSettings, plan: Plan | None = None, *, approve: bool = False
) -> RunResult:
    """Build a plan: `plan` given is submitted as the session's first version (source
    `library`; `PlanError` if it is not valid); else the session's own, or a planner's.
    Decided by `settings.approve_plan`, or approved at once with `approve=True`."""
    if plan is not None:
        if live.state.plans.versions:
            raise ConfigError("this session has a plan already; give none to build it")
        check(plan, settings.plan_limits)
    chosen = settings.approve_plan
    if approve:

        async def approving(version: PlanVersion) -> PlanVerdict:
            return PlanVerdict("approved", by="library")

        chosen = approving
    return await drive(
        live,
        dataclasses.replace(
            settings, plan=True, seed_plan=plan, seed_source="library", approve_plan=chosen
        ),
    )


async def seed_todos(live: LiveSession, items: Sequence[TodoItem], *, agent: str = MAIN) -> None:
    """Give `agent` (the main agent by default) this todo list before a run, checked as a
    `todo_write` is (unique ids, blockers that exist, no cycle: `TodoError` otherwise)
    and journaled like one, replacing the list it had. For an open session that no
    `drive` is running."""
    checked = write(TodoList(), items, at=now_ms())
    await live.emit(TodosChanged(agent=agent, replace=True, items=tuple(checked)))
