"""A long MCP call in the background (docs/tools.md, "Calls in the background"): a tool of
a server configured with `background` takes a `background` flag; such a call is a task
of kind `tool`, its progress notifications its progress messages (and the view's
`tool_progress`), and cancelling the task cancels the call at the server. Against the
real test server (server_app.py)."""

from __future__ import annotations

from pathlib import Path

import trio

import orchestrator as orc
from orchestrator import (
    MessagePosted,
    ModelRequest,
    ScriptedModel,
    ScriptedReply,
    TaskChanged,
    TaskCreated,
    ToolProgress,
    ToolResult,
)
from orchestrator.mcp import open_servers
from orchestrator.tools import ToolContext, Workspace
from tests.mcp.conftest import stdio_server
from tests.scenes import c


async def yes(request: orc.ApprovalRequest) -> bool:
    return True


async def test_a_background_mcp_call_reports_progress_and_is_cancelled_at_the_server(
    tmp_path: Path,
) -> None:
    progressed = trio.Event()
    events: list[object] = []

    def seen(event: object) -> None:
        events.append(event)
        if isinstance(event, MessagePosted) and event.mail == "progress":
            progressed.set()

    told: list[str] = []

    async def main(request: ModelRequest) -> ScriptedReply:
        last = request.messages[-1]
        if isinstance(last, ToolResult):
            told.append(str(last.content))
        if request.step == 0:
            return ScriptedReply(tool_calls=(c("docs__slow", seconds=600, background=True),))
        if request.step == 1:
            with trio.fail_after(30):  # (the server's "started", as a message from t1)
                await progressed.wait()
            return ScriptedReply(tool_calls=(c("cancel_task", task="t1", reason="long enough"),))
        if request.step == 2 or (told[-1] == "0" and len(told) < 200):
            # The server counts the call cancelled once it has read our notice and its
            # handler has stopped: another process's progress, asked until it is there.
            return ScriptedReply(tool_calls=(c("docs__cancelled_calls"),))
        return ScriptedReply(text="done")

    server = stdio_server("docs", tools=["slow", "cancelled_calls"], background=True)
    result = await orc.run(
        "wait a while",
        model=ScriptedModel(main),
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
        tools=[server],
        approve=yes,
        on_event=seen,
    )
    assert result.status == "completed", result.detail
    assert told[0].startswith(
        "started in the background as task t1 (docs__slow: seconds=600); go on with your work."
    )
    assert told[-1] == "1"  # the server's count of its cancelled calls of slow
    [created] = [e for e in events if isinstance(e, TaskCreated)]
    assert (created.task, created.task_kind, created.agent_type) == ("t1", "tool", "docs__slow")
    [progress] = [e for e in events if isinstance(e, MessagePosted) and e.mail == "progress"]
    assert (progress.agent, progress.to, progress.summary) == ("t1", "main", "started")
    assert any(isinstance(e, ToolProgress) and e.message == "started" for e in events)
    states = [e.state for e in events if isinstance(e, TaskChanged) and e.task == "t1"]
    assert states == ["running", "cancelled"]


async def test_only_a_server_configured_so_offers_the_flag_and_it_is_not_sent(
    tmp_path: Path,
) -> None:
    async with open_servers(
        [
            stdio_server("docs", tools=["search"]),
            stdio_server("bg", tools=["search"], background=True),
        ]
    ) as opened:
        plain, flagged = opened.tools
        assert "background" not in plain.spec().parameters["properties"]
        assert not plain.background
        assert flagged.background
        assert flagged.spec().parameters["properties"]["background"]["type"] == "boolean"
        args = flagged.args_model.model_validate({"query": "x", "background": False})
        ctx = ToolContext(workspace=Workspace(tmp_path))
        output = await flagged.run(args, ctx)  # (a server refuses an argument it lacks)
        assert output.content == "bg found: x"
