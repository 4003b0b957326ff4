"""How a call in the background is named where tasks are listed: its tool once, then its
command (`shell: make`), as a subagent's task is `worker: its title`.

On the local engine only: `orc.run` takes no runner, and these sessions delegate
nothing (a call in the background is run by the team's backgrounder, not the runner)."""

from __future__ import annotations

from pathlib import Path

from orchestrator import ModelRequest, ScriptedReply
from tests.scenes import c, reply, run_team


async def test_list_tasks_names_a_background_shell_call_by_its_tool_once(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()

    def main(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return reply("", c("shell", command="echo built", background=True))
        if request.step == 1:
            return reply("", c("list_tasks"))
        if request.step == 2:
            return reply("", c("wait_tasks", tasks=["t1"]))
        listed = [str(getattr(m, "content", "")) for m in request.messages]
        return reply(next(text for text in listed if text.startswith("t1 [")))

    result = await run_team("build", main, workspace, tmp_path)
    assert result.output is not None
    assert result.output.split("\n")[0].startswith("t1 [")
    assert "shell: echo built" in result.output
    assert "shell: shell:" not in result.output
