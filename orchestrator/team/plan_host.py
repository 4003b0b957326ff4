"""The session side of a plan: `Planning` journals each version submitted (the
`PlanHost` that `submit_plan` calls, and a plan from a file, an edit or a program) and
each decision on one (`PlanVerdict`, given by a `PlanApprover`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from orchestrator.errors import ToolFailed
from orchestrator.loop.plan import LIMITS, Plan, PlanLimits, Problem, check, replan_bound
from orchestrator.loop.plan_run import kept_problems
from orchestrator.loop.todos import now_ms
from orchestrator.state.events import EventSink
from orchestrator.state.plans import (
    PlanDecided,
    PlanSource,
    PlanSubmitted,
    PlanVersion,
    Replan,
    ReplanRequested,
)
from orchestrator.state.tasks import SETTLED
from orchestrator.team.port import SessionLike
from orchestrator.team.queries import MAIN, PLANNER


@dataclass(frozen=True)
class PlanVerdict:
    """A decision on a plan: `approved`, or `rejected` with `feedback` for the planner.
    `plan`: the person's edit, submitted as a new version and approved at once. `by`
    names who decided, in the journal (`person`, `--approve`, `library`)."""

    decision: Literal["approved", "rejected"]
    feedback: str = ""
    plan: Plan | None = None
    by: str = "person"


PlanApprover = Callable[[PlanVersion], Awaitable[PlanVerdict | None]]
"""Asked to decide on a submitted plan that no approval given in advance covers (its
`warnings` then end with why `--approve` does not); None: no decision now (the session
stops, blocked, and asks again when resumed)."""


class Planning:
    """The session side of `submit_plan` (tools/planning.py's `PlanHost`) and of a
    decision."""

    def __init__(
        self,
        session: SessionLike,
        sink: EventSink,
        cancel: Callable[[str, str, str], Awaitable[list[str]]],
        limits: PlanLimits = LIMITS,
    ) -> None:
        self._session = session
        self._sink = sink
        self._cancel = cancel  # (by, task id, reason): a task and its subtree
        self.limits = limits

    async def submit(
        self,
        agent: str,
        plan: Plan,
        warnings: list[Problem],
        *,
        ref: str = "",
        source: PlanSource = "planner",
    ) -> int:
        plans = self._session.state.plans
        again = next((v for v in plans.versions if ref and v.ref == ref), None)
        if again is not None:  # this call ran before a crash
            return again.version
        approved = plans.approved
        if plans.replanning is not None and approved is not None:
            done = {
                t.id
                for t in approved.tasks
                if self._session.state.tasks.plan_state(t.id) == "completed"
            }
            kept = kept_problems(approved, plan, done)
            if kept:
                lines = "\n".join(f"- {p}" for p in kept)
                raise ToolFailed(
                    f"the plan was not submitted: a new version keeps the work done:\n{lines}"
                )
        version = plans.next_version()
        await self._sink.emit(
            PlanSubmitted(
                agent=agent,
                version=version,
                plan=plan,
                source=source,
                warnings=tuple(str(w) for w in warnings),
                ref=ref,
                at=now_ms(),
            ),
            durable=True,
        )
        return version

    async def request_replan(self, agent: str, target: str, reason: str, *, ref: str) -> str:
        """Send plan task `target` (its id, or the id of the task delegated for it) back
        for re-planning: its live task is cancelled (and what waits on it with it), and
        the re-plan is journaled for the main loop to run. What to tell the builder."""
        state = self._session.state
        plans = state.plans
        plan = plans.approved
        if plan is None:
            raise ToolFailed("replan: this session has no approved plan to change")
        again = next((r for r in plans.replans if ref and r.ref == ref), None)
        if again is None:
            ids = [t.id for t in plan.tasks]
            task = state.tasks.get(target)
            plan_ref = target if target in ids else (task.plan_ref if task is not None else "")
            if plan_ref not in ids:
                raise ToolFailed(
                    f"replan: {target!r} is neither a task of the plan ({', '.join(ids)}) nor "
                    "a task delegated for one"
                )
            under_way = plans.replanning
            if under_way is not None:
                raise ToolFailed(
                    f"replan: task {under_way.plan_task} is being re-planned already; the "
                    "new version will cover what else needs changing"
                )
            if state.tasks.plan_state(plan_ref) == "completed":
                raise ToolFailed(f"replan: plan task {plan_ref} has completed; nothing to redo")
            of_task = sum(1 for r in plans.replans if r.plan_task == plan_ref)
            bound = replan_bound(of_task, len(plans.replans), self.limits)
            if bound:
                raise ToolFailed(
                    f"replan refused: plan task {plan_ref} cannot be re-planned again: {bound}. "
                    "Go on without a new plan: retry it as it stands (delegate it again with "
                    "its plan_ref), go on with the other tasks, or call report_blocked to ask "
                    "the person. If nothing else can go on, end your turn: the session stops "
                    "blocked and says why."
                )
            record = state.tasks.by_plan_ref(plan_ref)
            if record is not None and record.state not in SETTLED:
                await self._cancel(agent, record.task_id, f"sent back for re-planning: {reason}")
            again = Replan(
                plan_task=plan_ref, reason=reason, planner=f"{PLANNER}-{len(plans.replans) + 2}"
            )
            await self._sink.emit(
                ReplanRequested(
                    agent=agent,
                    plan_task=plan_ref,
                    reason=reason,
                    planner=again.planner,
                    ref=ref,
                    at=now_ms(),
                ),
                durable=True,
            )
        return (
            f"plan task {again.plan_task} goes back for re-planning ({again.planner} writes the "
            "next version, decided like the first); tasks that do not depend on it keep "
            "running, and you are told when the new version is approved. Your turn ends here."
        )

    async def decide(self, version: PlanVersion, verdict: PlanVerdict) -> int:
        """Journal `verdict` on `version` (an edit first becomes the next version); the
        version decided on."""
        decided = version.version
        if verdict.plan is not None and verdict.decision == "approved":
            await self._decide(decided, "rejected", verdict.by, "edited by the person")
            warnings = check(verdict.plan, self.limits)  # a PlanError names every error
            decided = await self.submit(verdict.by, verdict.plan, warnings, source="edit")
        await self._decide(decided, verdict.decision, verdict.by, verdict.feedback)
        return decided

    async def _decide(self, version: int, decision: str, by: str, feedback: str) -> None:
        await self._sink.emit(
            PlanDecided(
                agent=MAIN,
                version=version,
                decision=decision,  # type: ignore[arg-type]
                by=by,
                feedback=feedback,
                at=now_ms(),
            ),
            durable=True,
        )
