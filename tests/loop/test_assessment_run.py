"""The assessment's loop end to end (auto-continuation, loop detection, verification,
budgets) with the real team, turn loop and fold, on a session in memory with scripted
models; `test_assessment.py` has every rule of `assess` as a table."""

from __future__ import annotations

import sys
from typing import Any

import trio
import trio.testing

from orchestrator import (
    Assessed,
    Budgets,
    ModelRequest,
    Policy,
    Price,
    ScriptedReply,
    Usage,
    Verified,
)
from orchestrator.team.queries import MAIN
from orchestrator.tools import Workspace
from tests.scenes import Scene, c, last_text, reply, steps


def verdicts(scene: Scene) -> list[str]:
    """The main agent's verdicts, in order (the journal's `assessed` records)."""
    return [e.action for e in scene.events.events if isinstance(e, Assessed) and e.agent == MAIN]


def plan(*contents: str) -> tuple[str, dict[str, Any]]:
    return c("todo_write", todos=[{"content": text} for text in contents])


async def test_auto_continuation_until_the_todos_are_done(workspace: Workspace) -> None:
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", plan("a", "b", "c")),
                reply("", c("todo_update", id="1", status="completed")),
                reply("I did a."),  # stops early: two items remain
                reply("", c("todo_update", id="2", status="completed")),
                reply("Now b."),
                reply("", c("todo_update", id="3", status="completed")),
                reply("All three are done."),
            )
        },
    )
    outcome = await scene.run()
    assert (outcome.reason, outcome.detail) == ("completed", "all 3 todos done")
    assert verdicts(scene) == [
        "continue_from_context",
        "continue_from_context",
        "completed",
    ]
    notes = [
        m.content
        for m in scene.state.agents[MAIN].messages
        if "[auto-continue]" in getattr(m, "content", "")
    ]
    assert "(auto-continue 1 of 10)" in notes[0]
    assert "Why: 2 todos remain" in notes[0]
    assert "(auto-continue 2 of 10)" in notes[1]
    assert "Why: 1 todo remains" in notes[1]
    assert scene.state.progress[MAIN].continues == 2


async def test_loop_detection_stops_a_model_that_repeats_itself(workspace: Workspace) -> None:
    scene = Scene(
        workspace, {MAIN: steps(reply("", plan("a")), *[reply("I am working on it.")] * 3)}
    )
    outcome = await scene.run()
    assert outcome.reason == "blocked"
    assert "stalled: the same reply 3 times in a row" in outcome.detail


async def test_loop_detection_stops_a_repeated_tool_call_within_a_turn(
    workspace: Workspace,
) -> None:
    scene = Scene(
        workspace, {MAIN: steps(reply("", plan("a")), *[reply("", c("list_dir", path="."))] * 3)}
    )
    outcome = await scene.run()
    assert outcome.reason == "blocked"
    assert "stalled: the same tool call 3 times in a row" in outcome.detail
    assert scene.state.agents[MAIN].steps == 4  # stopped there, not at --max-rounds


async def test_rounds_without_progress_count_as_stalled(workspace: Workspace) -> None:
    replies = [reply("", plan("a"))] + [reply(f"thinking ({n})") for n in range(3)]
    scene = Scene(workspace, {MAIN: steps(*replies)}, policy=Policy(stall_rounds=3))
    outcome = await scene.run()
    assert outcome.reason == "blocked"
    assert "stalled: 3 rounds without progress" in outcome.detail


async def test_the_main_agent_reports_itself_blocked(workspace: Workspace) -> None:
    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", plan("deploy")),
                reply("", c("report_blocked", category="credential", reason="no deploy key")),
            )
        },
    )
    outcome = await scene.run()
    assert (outcome.reason, outcome.detail) == (
        "blocked",
        "reported blocked: credential: no deploy key",
    )


def check(script: str) -> str:
    return f"{sys.executable} -c {script!r}"


async def test_verification_fails_then_passes(workspace: Workspace) -> None:
    # The check passes once `fixed.txt` exists; the agent writes it after the failure.
    verify = check("import pathlib, sys; sys.exit(0 if pathlib.Path('fixed.txt').exists() else 3)")

    def after_failure(request: ModelRequest) -> ScriptedReply:
        text = last_text(request)
        assert "[verification failed]" in text, text
        assert "exit code 3" in text, text
        return reply("", c("write_file", path="fixed.txt", content="yes"))

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", plan("fix")),
                reply("", c("todo_update", id="1", status="completed")),
                reply("Done."),
                after_failure,
                reply("Fixed."),
            )
        },
        policy=Policy(verify=(verify,)),
    )
    outcome = await scene.completes()
    assert outcome.detail == f"all 1 todos done; verified: {verify} passed"
    assert verdicts(scene) == ["verify", "verify", "completed"]
    # The exit code is the tool's fact (ToolOutput.exit_code), not read from the output.
    assert [e.exit_code for e in scene.events.events if isinstance(e, Verified)] == [3, 0]
    assert scene.state.progress[MAIN].verify_failures == 1
    assert scene.state.progress[MAIN].continues == 1  # the failure used one


async def test_a_token_budget_ends_the_session(workspace: Workspace) -> None:
    def costly(text: str, *calls: tuple[str, dict[str, Any]]) -> ScriptedReply:
        return ScriptedReply(
            text=text,
            tool_calls=reply("", *calls).tool_calls,
            usage=Usage(input_tokens=600, output_tokens=100),
        )

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                costly("", plan("a", "b")),
                costly("", c("todo_update", id="1", status="completed")),
                costly("x"),
            )
        },
        policy=Policy(budgets=Budgets(tokens=1000)),
    )
    outcome = await scene.run()
    assert outcome.reason == "budget_exhausted"
    assert "session token budget spent: 1,400 of 1,000" in outcome.detail
    assert scene.state.agents[MAIN].steps == 2  # the third call was refused


async def test_a_cost_budget_uses_the_price_table(workspace: Workspace) -> None:
    priced = ScriptedReply(
        text="", tool_calls=reply("", plan("a")).tool_calls, usage=Usage(input_tokens=1_000_000)
    )
    scene = Scene(
        workspace,
        {MAIN: steps(priced, reply("never asked"))},
        policy=Policy(
            budgets=Budgets(cost=2.0), prices={"scripted": Price(input=3.0, output=15.0)}
        ),
    )
    outcome = await scene.run()
    assert outcome.reason == "budget_exhausted"
    assert "session cost budget spent: $3.0000 of $2.0000" in outcome.detail


async def test_a_wall_time_budget_ends_the_session(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    async def slow(request: ModelRequest) -> ScriptedReply:
        await trio.sleep(40)
        return reply("", c("todo_update", id="1", status="in_progress"))

    scene = Scene(
        workspace,
        {MAIN: steps(reply("", plan("a")), slow, slow, reply("never"))},
        policy=Policy(budgets=Budgets(wall=60)),
    )
    outcome = await scene.run()
    assert outcome.reason == "budget_exhausted"
    assert "session wall-time budget spent: 80 s of 60 s" in outcome.detail
