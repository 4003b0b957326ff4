"""The session side of a plan: `Planning` journals each version submitted (the
`PlanHost` that `submit_plan` calls, and a plan from a file, an edit or a program) and
each decision on one (`PlanVerdict`, given by a `PlanApprover`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from orchestrator.loop.plan import Plan, Problem, check
from orchestrator.loop.todos import now_ms
from orchestrator.state.events import EventSink
from orchestrator.state.plans import PlanDecided, PlanSource, PlanSubmitted, PlanVersion
from orchestrator.team.port import SessionLike
from orchestrator.team.queries import MAIN


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
"""Asked to decide on a submitted plan; None: no decision now (the session stops,
blocked, and asks again when resumed)."""


class Planning:
    """The session side of `submit_plan` (tools/planning.py's `PlanHost`) and of a
    decision."""

    def __init__(self, session: SessionLike, sink: EventSink) -> None:
        self._session = session
        self._sink = sink

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

    async def decide(self, version: PlanVersion, verdict: PlanVerdict) -> int:
        """Journal `verdict` on `version` (an edit first becomes the next version); the
        version decided on."""
        decided = version.version
        if verdict.plan is not None and verdict.decision == "approved":
            await self._decide(decided, "rejected", verdict.by, "edited by the person")
            warnings = check(verdict.plan)  # a PlanError names every error
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
