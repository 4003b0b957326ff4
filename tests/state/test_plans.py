"""The plans' fold: versions in order, one decision each, the approved one built."""

from __future__ import annotations

import pytest

from orchestrator import Plan, PlanDecided, PlanSubmitted, PlanTask, SessionState
from orchestrator.eventbase import FoldError

PLAN = Plan(goal="g", tasks=(PlanTask(id="a", title="A", acceptance="true"),))


def folded(*records: PlanSubmitted | PlanDecided) -> SessionState:
    state = SessionState()
    for seq, record in enumerate(records, 1):
        state.apply(seq, record)
    return state


def test_a_submitted_plan_waits_for_a_decision_and_only_approval_builds_it() -> None:
    state = folded(PlanSubmitted(agent="planner", version=1, plan=PLAN))
    assert state.plans.pending is not None
    assert state.plans.approved is None
    state.apply(2, PlanDecided(agent="main", version=1, decision="rejected", feedback="no"))
    assert state.plans.pending is None
    assert state.plans.approved is None
    assert state.plans.latest is not None
    assert state.plans.latest.feedback == "no"
    state.apply(3, PlanSubmitted(agent="planner", version=2, plan=PLAN, source="edit"))
    state.apply(4, PlanDecided(agent="main", version=2, decision="approved", by="--approve"))
    assert state.plans.approved == PLAN
    assert state.plans.task("a") == PLAN.tasks[0]
    assert state.plans.task("zz") is None
    version = state.plans.approved_version
    assert version is not None
    assert (version.version, version.decided_seq) == (2, 4)


def test_a_later_version_that_is_not_approved_leaves_the_approved_one_built() -> None:
    state = folded(
        PlanSubmitted(agent="planner", version=1, plan=PLAN),
        PlanDecided(agent="main", version=1, decision="approved"),
        PlanSubmitted(agent="planner", version=2, plan=PLAN),
    )
    version = state.plans.approved_version
    assert version is not None
    assert version.version == 1
    assert state.plans.pending is not None
    assert state.plans.pending.version == 2


@pytest.mark.parametrize(
    ("records", "error"),
    [
        ((PlanSubmitted(agent="p", version=2, plan=PLAN),), "version 2 submitted where 1"),
        ((PlanDecided(agent="m", version=1, decision="approved"),), "not the latest"),
        (
            (
                PlanSubmitted(agent="p", version=1, plan=PLAN),
                PlanDecided(agent="m", version=1, decision="approved"),
                PlanDecided(agent="m", version=1, decision="rejected"),
            ),
            "already approved",
        ),
    ],
)
def test_records_that_do_not_fit_are_fold_errors(
    records: tuple[PlanSubmitted | PlanDecided, ...], error: str
) -> None:
    with pytest.raises(FoldError, match=error):
        folded(*records)
