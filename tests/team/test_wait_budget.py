"""`wait_tasks` ends at the run's time budget (issue 37, item 10): a wait of 20 s under
`--budget-time 2` ran 18 s past it. On trio's virtual clock: nothing sleeps."""

from __future__ import annotations

import trio
import trio.testing

from orchestrator import ModelRequest, ScriptedReply
from orchestrator.loop.assessment import Budgets
from orchestrator.team.oversight import Policy
from orchestrator.team.queries import MAIN
from orchestrator.tools import Workspace
from tests.scenes import Scene, c, reply, steps


async def forever(request: ModelRequest) -> ScriptedReply:
    await trio.sleep_forever()
    raise AssertionError


async def test_a_wait_ends_when_the_time_budget_does(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    main = steps(
        reply("", c("delegate", description="slow", prompt=".")),
        reply("", c("wait_tasks", timeout=20)),
        reply("never asked: the budget is spent"),
    )
    scene = Scene(workspace, {MAIN: main, "t1": forever}, policy=Policy(budgets=Budgets(wall=2)))
    started = trio.current_time()
    outcome = await scene.run()
    assert trio.current_time() - started < 3  # not 20
    assert outcome.reason == "budget_exhausted"
    said = [m.content for m in scene.state.agents[MAIN].messages if m.role == "tool"][1]
    assert said.startswith(
        "stopped waiting after 2 s: the session's time budget is spent; still running tasks"
    )
