"""When a session's servers start: a new session's side by side before its first model
call (it needs their listings), a resumed one's at the first call of one of their tools
(it has their definitions pinned), and one that fails then is that call's error, the
session going on. Against real servers (server_app.py) that say when they start."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson

import orchestrator as orc
from orchestrator import ModelRequest, ScriptedModel, ScriptedReply, ToolResult
from orchestrator.mcp import McpServer, open_servers
from orchestrator.session.memory import MemorySession
from tests.mcp.conftest import APP
from tests.scenes import c


def server(started: Path, *more: str, name: str = "docs", timeout: float = 60) -> McpServer:
    """The test server, adding a line to `started` each time its process starts."""
    args = [str(APP), "stdio", "--name", name, "--started", str(started), *more]
    return McpServer.stdio(name, sys.executable, args, tools=["search"], timeout=timeout)


def starts(started: Path) -> int:
    return len(started.read_text().splitlines()) if started.exists() else 0


def calling(query: str | None) -> ScriptedModel:
    """A model that searches for `query` (None: searches nothing), then says the result."""

    def respond(request: ModelRequest) -> ScriptedReply:
        last = request.messages[-1]
        if isinstance(last, ToolResult):
            return ScriptedReply(text=f"{last.status}: {last.content}")
        if query is None:
            return ScriptedReply(text="nothing")
        return ScriptedReply(tool_calls=(c("docs__search", query=query),))

    return ScriptedModel(respond)


async def test_a_resumed_session_starts_a_pinned_server_at_its_first_call(
    tmp_path: Path,
) -> None:
    started = tmp_path / "started"
    sessions = tmp_path / "s"
    first = await orc.run(
        "look",
        model=calling("a"),
        workspace=tmp_path,
        sessions_dir=sessions,
        tools=[server(started)],
    )
    assert (first.output, starts(started)) == ("ok: docs found: a", 1)
    directory = first.session_dir or Path()
    lines = (directory / "journal.jsonl").read_text().splitlines()
    [pin] = [orjson.loads(line) for line in lines if '"mcp_pinned"' in line]
    assert pin["resources"] is False  # (its resources read through no tool)
    # Resumed without a call of its tools: the server is not started at all.
    again = await orc.resume(
        directory, model=calling(None), message="anything else?", tools=[server(started)]
    )
    assert (again.status, starts(started)) == ("completed", 1)
    # Resumed with one: started then, its tool offered as pinned meanwhile.
    again = await orc.resume(
        directory, model=calling("b"), message="once more", tools=[server(started)]
    )
    assert (again.output, starts(started)) == ("ok: docs found: b", 2)


async def test_a_lazy_server_that_fails_to_start_is_its_calls_error_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    started = tmp_path / "started"
    first = await orc.run(
        "look",
        model=calling("a"),
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
        tools=[server(started)],
    )
    gone = McpServer.stdio("docs", str(tmp_path / "gone"), tools=["search"])
    # No warning as the session starts (pytest's warnings are errors): it is not started.
    again = await orc.resume(
        first.session_dir or Path(), model=calling("b"), message="more", tools=[gone]
    )
    assert again.status == "completed"
    assert again.output.startswith(
        f"error: MCP server 'docs' did not start ({tmp_path / 'gone'}): "
    )


async def test_a_new_sessions_servers_start_side_by_side(tmp_path: Path) -> None:
    # Each server waits, as it starts, for the other to open the other end of a FIFO:
    # started one after the other, the first would time out.
    fifo = tmp_path / "meet"
    os.mkfifo(fifo)
    started = tmp_path / "started"
    one = server(started, "--meet-write", str(fifo), name="one", timeout=10)
    two = server(started, "--meet-read", str(fifo), name="two", timeout=10)
    async with open_servers([one, two]) as opened:
        assert opened.failed == ()
        assert [tool.name for tool in opened.tools] == ["one__search", "two__search"]
        pinned = await opened.pinned(MemorySession())
        assert [tool.name for tool in pinned.tools] == ["one__search", "two__search"]
    assert starts(started) == 2


async def test_a_server_whose_resources_the_session_read_is_started_with_it(
    tmp_path: Path,
) -> None:
    # Its `read_resource` tool's description lists its resources, which only it can say.
    started = tmp_path / "started"
    reads = server(started, "--resources")
    reads = McpServer.stdio("docs", reads.command or "", reads.args, tools=["search", "read_*"])
    first = await orc.run(
        "look", model=calling("a"), workspace=tmp_path, sessions_dir=tmp_path / "s", tools=[reads]
    )
    assert starts(started) == 1
    again = await orc.resume(
        first.session_dir or Path(), model=calling(None), message="more", tools=[reads]
    )
    assert (again.status, starts(started)) == ("completed", 2)
