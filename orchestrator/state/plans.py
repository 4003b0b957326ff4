"""A session's plans: each version submitted (by the planner, from a file, edited by the
person, or given by a program), the decision on it, its records and its fold.

A plan goes `submitted` -> `approved` or `rejected`. Only an explicit approval (a
`plan_decided` record with `approved`) lets the builder start: a crash, Ctrl+C or EOF at
the prompt leaves the version submitted and undecided, and the session asks again. An
edit by the person is a new version (source `edit`) approved at once. A re-plan is a new
version too, decided like the first; tasks of the old version that it keeps go on.

`plan.json` and `plan.md` in the session directory are views of the latest version for
people and tools (written atomically); resume never reads them.
"""

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from orchestrator.eventbase import EventBase, FoldError
from orchestrator.loop.plan import Plan, PlanTask

PlanSource = Literal["planner", "file", "edit", "library"]
Decision = Literal["approved", "rejected"]


class PlanSubmitted(EventBase, frozen=True, tag="plan_submitted"):
    """Record: version `version` of the session's plan, valid (its warnings kept), from
    `source`; `ref` is the `submit_plan` call that gave it, if one did."""

    version: int
    plan: Plan
    source: PlanSource = "planner"
    warnings: tuple[str, ...] = ()
    ref: str = ""
    at: int = 0


class PlanDecided(EventBase, frozen=True, tag="plan_decided"):
    """Record: the decision on version `version`. `by` says who decided (`person` at the
    terminal, `--approve`, `library`, or what a program's callback names); `feedback`
    goes back to the planner on a rejection."""

    version: int
    decision: Decision
    by: str = "person"
    feedback: str = ""
    at: int = 0


class ReplanRequested(EventBase, frozen=True, tag="replan_requested"):
    """Record: the builder sent plan task `plan_task` (and what depends on it) back for
    re-planning, for `reason`; the agent `planner` (a fresh context) writes the next
    version. `ref`: the `replan` call."""

    plan_task: str
    reason: str
    planner: str
    ref: str = ""
    at: int = 0


PlanRecords = PlanSubmitted | PlanDecided | ReplanRequested
"""The plans' records (see `Record` in state/events.py)."""


class PlanVersion(msgspec.Struct, kw_only=True):
    """One version and what became of it (folded and snapshotted)."""

    version: int
    plan: Plan
    source: PlanSource = "planner"
    warnings: list[str] = msgspec.field(default_factory=list)
    ref: str = ""  # the `submit_plan` call that gave it
    submitted_seq: int = 0
    decision: Decision | None = None
    by: str = ""
    feedback: str = ""
    decided_seq: int = 0


class Replan(msgspec.Struct, kw_only=True):
    """A request to re-plan (folded and snapshotted)."""

    plan_task: str
    reason: str
    planner: str
    ref: str = ""
    seq: int = 0


class Plans(msgspec.Struct, kw_only=True):
    """Every version of the session's plan, oldest first, and every re-plan asked."""

    versions: list[PlanVersion] = msgspec.field(default_factory=list)
    replans: list[Replan] = msgspec.field(default_factory=list)
    # The version whose tasks the builder's todos are (0: none yet): an approved version
    # past it still has to be handed to the builder.
    seeded: int = 0

    @property
    def replanning(self) -> Replan | None:
        """The re-plan under way: asked, and no version submitted since approved yet."""
        if not self.replans:
            return None
        request = self.replans[-1]
        approved = self.approved_version
        if approved is not None and approved.submitted_seq > request.seq:
            return None
        return request

    @property
    def latest(self) -> PlanVersion | None:
        return self.versions[-1] if self.versions else None

    @property
    def pending(self) -> PlanVersion | None:
        """The latest version, while nobody has decided on it."""
        latest = self.latest
        return latest if latest is not None and latest.decision is None else None

    @property
    def approved_version(self) -> PlanVersion | None:
        """The latest approved version: the one being built."""
        for version in reversed(self.versions):
            if version.decision == "approved":
                return version
        return None

    @property
    def approved(self) -> Plan | None:
        version = self.approved_version
        return None if version is None else version.plan

    def task(self, plan_ref: str) -> PlanTask | None:
        """The approved plan's task `plan_ref`, or None."""
        plan = self.approved
        if plan is None or not plan_ref:
            return None
        return next((t for t in plan.tasks if t.id == plan_ref), None)

    def next_version(self) -> int:
        return len(self.versions) + 1


def _submitted(plans: Plans, seq: int, record: PlanSubmitted) -> None:
    if record.version != plans.next_version():
        raise FoldError(
            f"plan version {record.version} submitted where {plans.next_version()} was next"
        )
    plans.versions.append(
        PlanVersion(
            version=record.version,
            plan=record.plan,
            source=record.source,
            warnings=list(record.warnings),
            ref=record.ref,
            submitted_seq=seq,
        )
    )


def _decided(plans: Plans, seq: int, record: PlanDecided) -> None:
    latest = plans.latest
    if latest is None or latest.version != record.version:
        raise FoldError(f"a decision on plan version {record.version}, which is not the latest")
    if latest.decision is not None:
        raise FoldError(f"plan version {record.version} was already {latest.decision}")
    latest.decision = record.decision
    latest.by = record.by
    latest.feedback = record.feedback
    latest.decided_seq = seq


def _replan(plans: Plans, seq: int, record: ReplanRequested) -> None:
    if plans.approved is None:
        raise FoldError("a re-plan was asked with no approved plan")
    if plans.replanning is not None:
        raise FoldError("a re-plan was asked while another was under way")
    plans.replans.append(
        Replan(
            plan_task=record.plan_task,
            reason=record.reason,
            planner=record.planner,
            ref=record.ref,
            seq=seq,
        )
    )


PLAN_FOLDS: dict[type, Callable[[Plans, int, Any], None]] = {
    PlanSubmitted: _submitted,
    PlanDecided: _decided,
    ReplanRequested: _replan,
}
"""How each plan record changes the session's plans."""
