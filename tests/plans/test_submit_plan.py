"""`submit_plan` checks a plan by every rule before anything is journaled, and sends
every error back to the planner at once; warnings go with a valid submission."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator import MemorySession, ToolContext
from orchestrator.errors import ToolFailed
from orchestrator.team.plan_host import Planning
from orchestrator.tools import Workspace
from orchestrator.tools.planning import SubmitPlan, SubmitPlanArgs


def task(tid: str, **more: Any) -> dict[str, Any]:
    return {"id": tid, "title": f"do {tid}", "acceptance": "true", **more}


async def nothing_to_cancel(by: str, task_id: str, reason: str) -> list[str]:
    return []


async def submit(tmp_path: Any, tasks: list[dict[str, Any]]) -> tuple[str, MemorySession]:
    """Submit, then run the same call again (as after a crash): it finds its version."""
    session = MemorySession()
    tool = SubmitPlan(Planning(session, session, nothing_to_cancel))
    args = SubmitPlanArgs.model_validate({"goal": "g", "tasks": tasks})
    context = ToolContext(workspace=Workspace(tmp_path), agent="planner", session="s", call="3.0")
    output = await tool.run(args, context)
    again = await tool.run(args, context)
    assert again.content == output.content
    assert output.ends_turn
    return output.content, session


@pytest.mark.parametrize(
    ("tasks", "errors"),
    [
        ([], ["the plan has no tasks"]),
        ([task("a"), task("a")], ["a: the id is used by more than one task"]),
        ([task("a", depends_on=["zz"])], ["a: depends on zz, which is no task"]),
        (
            [task("a", depends_on=["b"]), task("b", depends_on=["a"])],
            ["a: dependency cycle: a -> b -> a"],
        ),
        (
            [{"id": "a", "title": "do a"}],
            ["a: no acceptance check: give a command, or say why there is none"],
        ),
        (
            [task("a", no_acceptance_reason="a doc")],
            ["a: give an acceptance check or a reason, not both"],
        ),
        ([task("a b")], ["id 'a b' is not a letter or digit"]),
        (
            [task("a", title="two\nlines"), task("b", write_scope=["x,y"])],
            ["a: the title is more than one line", "b: a write scope entry holds a comma"],
        ),
    ],
)
async def test_each_rule_refuses_the_plan_with_nothing_journaled(
    tmp_path: Any, tasks: list[dict[str, Any]], errors: list[str]
) -> None:
    session = MemorySession()
    tool = SubmitPlan(Planning(session, session, nothing_to_cancel))
    args = SubmitPlanArgs.model_validate({"goal": "g", "tasks": tasks})
    context = ToolContext(workspace=Workspace(tmp_path), agent="planner", session="s", call="3.0")
    with pytest.raises(ToolFailed) as refused:
        await tool.run(args, context)
    said = str(refused.value)
    assert said.startswith("the plan was not submitted: ")
    for error in errors:
        assert error in said
    assert session.state.plans.versions == []


async def test_a_valid_plan_is_journaled_with_its_warnings_and_ends_the_turn(
    tmp_path: Any,
) -> None:
    tasks = [task("a", write_scope=["src/"]), task("b", write_scope=["src/b.py"])]
    said, session = await submit(tmp_path, tasks)
    assert said.startswith("plan v1 submitted with 2 task(s); it awaits approval")
    assert "warning: a: a and b may run at the same time and their write scopes overlap" in said
    [version] = session.state.plans.versions
    assert version.ref == "3.0"
    assert version.warnings == [
        "a: a and b may run at the same time and their write scopes overlap (src/ / "
        "src/b.py): they will run one after the other"
    ]
