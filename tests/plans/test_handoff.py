"""Plan handoff end to end, on the scripted model: the planner submits, a decision is
journaled, the builder starts from the approved plan, and its todos follow the tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator import (
    Plan,
    PlanApprover,
    PlanTask,
    PlanVerdict,
    PlanVersion,
    RunResult,
    ScriptedModel,
    drive,
    load_state,
    open_session,
    parse_plan_json,
)
from orchestrator.loop.plan_markdown import parse_markdown
from orchestrator.models.scripted import parse_script
from tests.scenes import run_settings, scripted_session
from tests.team.test_drive import cut_after


def task(tid: str, path: str, depends: list[str] | None = None) -> dict[str, Any]:
    return {
        "id": tid,
        "title": f"write {path}",
        "depends_on": depends or [],
        "write_scope": [path],
        "acceptance": f"test -f {path}",
    }


PLAN_ARGS = {"goal": "write two files", "tasks": [task("a", "a.txt"), task("b", "b.txt", ["a"])]}


def worker(path: str) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": "x"}}]},
        {"tool_calls": [{"name": "complete", "arguments": {"summary": f"wrote {path}"}}]},
    ]


def delegate(ref: str) -> dict[str, Any]:
    return {
        "name": "delegate",
        "arguments": {"description": f"plan task {ref}", "prompt": "do it", "plan_ref": ref},
    }


SCRIPT: dict[str, Any] = {
    "agents": {
        "planner": [{"tool_calls": [{"name": "submit_plan", "arguments": PLAN_ARGS}]}],
        "main": [
            {"tool_calls": [delegate("a")]},
            {"tool_calls": [{"name": "wait_tasks", "arguments": {}}]},
            {"tool_calls": [delegate("b")]},
            {"tool_calls": [{"name": "wait_tasks", "arguments": {}}]},
            {"text": "built"},
        ],
        "t1": worker("a.txt"),
        "t2": worker("b.txt"),
    }
}


class Approver:
    """Answers each plan with the next verdict, and keeps what it was shown."""

    def __init__(self, *verdicts: PlanVerdict | None) -> None:
        self.verdicts = list(verdicts)
        self.shown: list[PlanVersion] = []

    async def __call__(self, version: PlanVersion) -> PlanVerdict | None:
        self.shown.append(version)
        return self.verdicts.pop(0)


def new_session(tmp_path: Path, script: dict[str, Any]) -> tuple[Path, str, Path]:
    return scripted_session(tmp_path, script, goal="write two files")


async def run(
    root: Path,
    session_id: str,
    script: dict[str, Any],
    approve: PlanApprover | None,
    **more: Any,
) -> RunResult:
    model = ScriptedModel(parse_script(script))
    settings = run_settings(
        model,
        plan=True,
        approve_plan=approve,
        **more,
    )
    async with open_session(root, session_id, warn=lambda _: None) as live:
        return await drive(live, settings)


APPROVE = PlanVerdict("approved", by="--approve")


async def test_an_approved_plan_is_built_from_a_context_of_its_own(tmp_path: Path) -> None:
    root, session_id, directory = new_session(tmp_path, SCRIPT)
    approver = Approver(APPROVE)
    result = await run(root, session_id, SCRIPT, approver)
    assert result.status == "completed", result
    state = load_state(directory, warn=pytest.fail)
    plan = state.plans.approved
    assert plan is not None
    assert [t.id for t in plan.tasks] == ["a", "b"]
    assert [v.version for v in approver.shown] == [1]
    version = state.plans.approved_version
    assert version is not None
    assert (version.by, version.source) == ("--approve", "planner")
    # The builder's context holds the goal and the plan, not the planner's conversation.
    main = state.agents["main"]
    assert main.role == "builder"
    brief = main.messages[1].content
    assert "### a. write a.txt" in brief
    assert "submit_plan" not in brief
    # One todo per plan task, linked, whose status is its task's.
    items = state.todos["main"].items
    assert {i: (t.plan_task, t.status) for i, t in items.items()} == {
        "a": ("a", "completed"),
        "b": ("b", "completed"),
    }
    assert items["b"].result == "wrote b.txt"
    assert [t.plan_ref for t in state.tasks.tasks.values()] == ["a", "b"]
    # A plan task's worker reads the plan's words for it, its scope and its check.
    told = state.agents["t1"].messages[1].content
    assert "Plan task a: write a.txt" in told
    assert "Write scope (write only here): a.txt" in told
    assert "Acceptance check (runs when you call complete; it must pass): test -f a.txt" in told
    # The plan's views, in both forms.
    assert parse_plan_json((directory / "plan.json").read_bytes()) == plan
    assert parse_markdown((directory / "plan.md").read_text()) == plan


async def test_no_decision_never_builds_and_the_resume_asks_again(tmp_path: Path) -> None:
    root, session_id, directory = new_session(tmp_path, SCRIPT)
    result = await run(root, session_id, SCRIPT, Approver(None))
    assert result.status == "blocked"
    assert "plan v1 awaits approval" in result.detail
    assert "execute ID --approve" in result.advice
    state = load_state(directory, warn=pytest.fail)
    assert "main" not in state.agents
    pending = state.plans.pending
    assert pending is not None
    assert pending.version == 1
    # A headless resume without a way to decide stops the same way, and asks no planner.
    assert (await run(root, session_id, SCRIPT, None)).status == "blocked"
    assert load_state(directory, warn=pytest.fail).agents["planner"].steps == 1
    approver = Approver(APPROVE)
    assert (await run(root, session_id, SCRIPT, approver)).status == "completed"
    assert [v.version for v in approver.shown] == [1]


async def test_ctrl_c_at_the_prompt_approves_nothing(tmp_path: Path) -> None:
    root, session_id, directory = new_session(tmp_path, SCRIPT)

    async def interrupted(version: PlanVersion) -> PlanVerdict | None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await run(root, session_id, SCRIPT, interrupted)
    state = load_state(directory, warn=pytest.fail)
    assert state.status == "interrupted"
    assert state.plans.pending is not None
    assert state.plans.approved is None
    assert "main" not in state.agents


async def test_a_rejection_goes_back_to_the_planner_with_the_feedback(tmp_path: Path) -> None:
    script = {**SCRIPT, "agents": {**SCRIPT["agents"]}}
    script["agents"]["planner"] = [
        {"tool_calls": [{"name": "submit_plan", "arguments": {**PLAN_ARGS, "tasks": []}}]},
        {"tool_calls": [{"name": "submit_plan", "arguments": PLAN_ARGS}]},
        {"tool_calls": [{"name": "submit_plan", "arguments": PLAN_ARGS}]},
    ]
    root, session_id, directory = new_session(tmp_path, script)
    approver = Approver(PlanVerdict("rejected", feedback="split it finer"), APPROVE)
    assert (await run(root, session_id, script, approver)).status == "completed"
    state = load_state(directory, warn=pytest.fail)
    planner = state.agents["planner"]
    # The empty plan was refused at the call, naming the error; the person never saw it.
    first = planner.messages[3].content
    assert "the plan has no tasks" in first
    assert "split it finer" in planner.messages[-3].content
    assert [(v.version, v.decision) for v in state.plans.versions] == [
        (1, "rejected"),
        (2, "approved"),
    ]
    assert [v.version for v in approver.shown] == [1, 2]


async def test_an_edit_is_a_new_version_approved_at_once(tmp_path: Path) -> None:
    root, session_id, directory = new_session(tmp_path, SCRIPT)

    def writes(tid: str, *after: str) -> PlanTask:
        path = f"{tid}.txt"
        return PlanTask(
            id=tid, title=f"write {path}", depends_on=after, write_scope=(path,), acceptance="true"
        )

    edited = Plan(goal="write two files", tasks=(writes("a"), writes("b", "a")))
    approver = Approver(PlanVerdict("approved", plan=edited))
    assert (await run(root, session_id, SCRIPT, approver)).status == "completed"
    state = load_state(directory, warn=pytest.fail)
    assert [(v.version, v.source, v.decision) for v in state.plans.versions] == [
        (1, "planner", "rejected"),
        (2, "edit", "approved"),
    ]
    assert state.plans.approved == edited
    assert parse_plan_json((directory / "plan.json").read_bytes()) == edited


async def test_a_plan_given_whole_skips_the_planner(tmp_path: Path) -> None:
    root, session_id, directory = new_session(tmp_path, SCRIPT)
    plan = parse_plan_json(
        orjson.dumps({**PLAN_ARGS, "version": 1}),
    )
    approver = Approver(APPROVE)
    result = await run(root, session_id, SCRIPT, approver, seed_plan=plan)
    assert result.status == "completed", result
    state = load_state(directory, warn=pytest.fail)
    assert "planner" not in state.agents
    version = state.plans.approved_version
    assert version is not None
    assert (version.source, version.plan) == ("file", plan)


async def test_a_failed_acceptance_check_sends_the_task_back_and_all_run_at_the_end(
    tmp_path: Path,
) -> None:
    script = {**SCRIPT, "agents": {**SCRIPT["agents"]}}
    done = {"name": "complete", "arguments": {"summary": "wrote a.txt"}}
    script["agents"]["t1"] = [{"tool_calls": [done]}, *worker("a.txt")]
    root, session_id, directory = new_session(tmp_path, script)
    assert (await run(root, session_id, script, Approver(APPROVE))).status == "completed"
    state = load_state(directory, warn=pytest.fail)
    refused = state.agents["t1"].messages[3]
    assert "complete refused: the plan's acceptance check for task a did not pass" in (
        refused.content
    )
    assert "$ test -f a.txt" in refused.content
    assert state.agents["t1"].steps == 3
    # The plan's checks are the session's verification at the end.
    verified = [r for r in journal(directory) if r["k"] == "verified" and r["a"] == "main"]
    assert verified[-1]["commands"] == ["test -f a.txt", "test -f b.txt"]


def journal(directory: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (directory / "journal.jsonl").read_bytes().splitlines()]


async def test_the_runtime_keeps_the_order_the_builder_ignores(tmp_path: Path) -> None:
    script = {**SCRIPT, "agents": {**SCRIPT["agents"]}}
    # b first, in the same reply as a: b waits for a all the same.
    script["agents"]["main"] = [
        {"tool_calls": [delegate("b"), delegate("a")]},
        {"tool_calls": [{"name": "wait_tasks", "arguments": {}}]},
        {"text": "built"},
    ]
    script["agents"]["t1"] = worker("b.txt")
    script["agents"]["t2"] = worker("a.txt")
    root, session_id, directory = new_session(tmp_path, script)
    assert (await run(root, session_id, script, Approver(APPROVE))).status == "completed"
    records = journal(directory)
    a_done = next(
        r["seq"]
        for r in records
        if r["k"] == "task_changed" and r["task"] == "t2" and r["state"] == "completed"
    )
    b_first_call = next(
        r["seq"] for r in records if r["k"] == "assistant_replied" and r["a"] == "t1"
    )
    assert a_done < b_first_call
    created = next(r for r in records if r["k"] == "task_created" and r["task"] == "t1")
    assert (created["state"], created["after_plan"]) == ("waiting_deps", ["a"])


async def test_planner_and_builder_run_with_their_roles_models(tmp_path: Path) -> None:
    root, session_id, _ = new_session(tmp_path, SCRIPT)
    model = ScriptedModel(parse_script(SCRIPT))
    roles: list[str] = []

    def models(role: str) -> ScriptedModel:
        roles.append(role)
        return model

    result = await run(root, session_id, SCRIPT, Approver(APPROVE), models=models)
    assert result.status == "completed"
    assert {"planner", "builder", "worker"} <= set(roles)
    assert "main" not in roles


async def test_a_builder_that_ends_its_turn_waits_for_its_plan_tasks(tmp_path: Path) -> None:
    script = {**SCRIPT, "agents": {**SCRIPT["agents"]}}
    script["agents"]["main"] = [
        {"tool_calls": [delegate("a"), delegate("b")]},
        {"text": "Both delegated; the runtime runs b after a."},
        {"text": "a is done; b runs."},  # each completion's mail starts a turn
        {"text": "built"},
    ]
    root, session_id, directory = new_session(tmp_path, script)
    assert (await run(root, session_id, script, Approver(APPROVE))).status == "completed"
    actions = [r["action"] for r in journal(directory) if r["k"] == "assessed" and r["a"] == "main"]
    assert actions[0] == "await_tasks"  # not sent back to work its tasks' todos
    assert "continue_from_context" not in actions


async def test_a_rejection_reaches_the_planner_once_even_across_a_crash(tmp_path: Path) -> None:
    script = {**SCRIPT, "agents": {**SCRIPT["agents"]}}
    submit = {"tool_calls": [{"name": "submit_plan", "arguments": PLAN_ARGS}]}
    script["agents"]["planner"] = [submit, submit]
    root, session_id, directory = new_session(tmp_path, script)
    rejected = Approver(PlanVerdict("rejected", feedback="smaller"), None)
    assert (await run(root, session_id, script, rejected)).status == "blocked"
    cut_after(directory, "plan_decided")  # a crash right after the decision was journaled
    state = load_state(directory, warn=pytest.fail)
    assert [(v.version, v.decision) for v in state.plans.versions] == [(1, "rejected")]
    assert (await run(root, session_id, script, Approver(APPROVE))).status == "completed"
    planner = load_state(directory, warn=pytest.fail).agents["planner"]
    said = [m.content for m in planner.messages if m.role == "user"]
    assert sum("The person's feedback: smaller" in text for text in said) == 1
