"""A coordination call that fails leaves the state as if it had not started: an absurd
number is refused by the arguments' bounds before anything is recorded, and the next
call gets the id the failed one would have had (ids come from the fold)."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator import ModelRequest, ScriptedReply
from orchestrator.team.queries import MAIN
from orchestrator.tools import Workspace
from tests.scenes import Scene, c, reply, steps
from tests.team.engines import Engine


@pytest.mark.parametrize(
    ("absurd", "refusal"),
    [
        (
            {"deadline_seconds": 1e300},
            "deadline_seconds: Input should be less than or equal to 604800",
        ),
        ({"round_budget": 2**62}, "round_budget: Input should be less than or equal to 100000"),
        ({"token_budget": -1}, "token_budget: Input should be greater than 0"),
    ],
)
async def test_a_delegate_with_an_absurd_number_records_nothing(
    workspace: Workspace, absurd: dict[str, Any], refusal: str, engine: Engine
) -> None:
    results: list[str] = []

    def look(request: ModelRequest) -> ScriptedReply:
        results.extend(str(m.content) for m in request.messages if m.role == "tool")
        return reply("done")

    scene = Scene(
        workspace,
        {
            MAIN: steps(
                reply("", c("delegate", description="a", prompt="p", **absurd)),
                reply("", c("delegate", description="b", prompt="p", agent_type="explorer")),
                reply("", c("wait_tasks", timeout=1e300), c("wait_tasks", timeout=60)),
                look,
            ),
            "t1": steps(reply("", c("complete", summary="b done"))),
        },
        engine=engine,
    )
    await scene.completes()
    assert refusal in results[0], results[0]
    # Nothing of the refused call: the next delegation is t1, with its context only.
    assert results[1].startswith("delegated. task_id=t1 type=explorer")
    assert list(scene.state.tasks.tasks) == ["t1"]
    assert sorted(scene.state.agents) == [MAIN, "t1"]
    # Read-only calls of one reply run together: the refused wait is one of the two.
    assert (
        "invalid arguments for wait_tasks: timeout: Input should be less than or equal to "
        "604800" in results[2:]
    )
