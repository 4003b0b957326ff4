"""MCP tool definitions on demand, against real servers with many tools: past the budget
an agent is offered `search_tools` (its description names each tool in one line) and
none of the MCP tools' definitions; a search loads the best matches, whose definitions
join the tools of its next requests after those it had; the load is journaled, so a
resumed agent sends what it sent before. Under the budget, nothing changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

import orchestrator as orc
from orchestrator import ModelRequest, ScriptedModel, ScriptedReply, ToolResult
from orchestrator.mcp import McpServer
from orchestrator.session.memory import MemorySession
from orchestrator.tools import ToolContext, Workspace
from orchestrator.tools.deferred import MAX_UPFRONT, SearchArgs, SearchTools, over_budget
from tests.mcp.conftest import stdio_server
from tests.scenes import c


def many(name: str, count: int) -> McpServer:
    """A test server with `count` tools `op_NN` (and no others)."""
    server = stdio_server(name)
    return McpServer.stdio(
        name, server.command or "", [*server.args, "--many", str(count)], tools=["op_*"]
    )


def mcp_names(request: ModelRequest) -> list[str]:
    return [t.name for t in request.tools if "__" in t.name]


async def test_past_the_budget_tools_load_on_demand_and_a_resume_sends_the_same(
    tmp_path: Path,
) -> None:
    requests: list[ModelRequest] = []

    def respond(request: ModelRequest) -> ScriptedReply:
        requests.append(request)
        last = request.messages[-1]
        if not isinstance(last, ToolResult):
            return ScriptedReply(tool_calls=(c("search_tools", query="builds of b"),))
        if "Loaded" in last.content:
            return ScriptedReply(tool_calls=(c("b__op_02", target="main"),))
        return ScriptedReply(text=last.content)

    servers = [many("a", 25), many("b", 25)]
    result = await orc.run(
        "go",
        model=ScriptedModel(respond),
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
        tools=servers,
    )
    assert result.output == "op_02 on main"
    first, second, third = requests
    assert mcp_names(first) == []
    search = next(t for t in first.tools if t.name == "search_tools")
    assert "- a__op_00: Operation 0 of a: finds the issues of a target" in search.description
    assert search.description.count("\n- ") == 50
    # The best matches (b's tools about builds), after the tools the agent had.
    loaded = ["b__op_02", "b__op_09", "b__op_16", "b__op_23", "a__op_02"]
    assert mcp_names(second) == loaded
    assert second.tools[: len(first.tools)] == first.tools
    assert third.tools == second.tools
    records = [
        orjson.loads(line)
        for line in (result.session_dir or Path())
        .joinpath("journal.jsonl")
        .read_text()
        .splitlines()
    ]
    assert [r["tools"] for r in records if r["k"] == "mcp_tools_loaded"] == [loaded]
    # Resumed, the agent is offered what it loaded, as before.
    requests.clear()
    await orc.resume(
        result.session_dir or Path(), model=ScriptedModel(respond), message="again", tools=servers
    )
    assert requests[0].tools == third.tools


async def test_under_the_budget_every_definition_is_sent(tmp_path: Path) -> None:
    requests: list[ModelRequest] = []

    def respond(request: ModelRequest) -> ScriptedReply:
        requests.append(request)
        return ScriptedReply(text="fine")

    await orc.run(
        "go",
        model=ScriptedModel(respond),
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
        tools=[many("a", MAX_UPFRONT)],
    )
    (request,) = requests
    assert len(mcp_names(request)) == MAX_UPFRONT
    assert "search_tools" not in {t.name for t in request.tools}


def test_the_budget_is_a_count_or_a_share_of_the_window() -> None:
    assert not over_budget([], 1000)
    assert over_budget([object()] * (MAX_UPFRONT + 1), 0)  # type: ignore[list-item]


async def test_a_search_naming_tools_loads_those_and_words_load_the_best_matches(
    tmp_path: Path,
) -> None:
    def made(name: str, doc: str) -> orc.Tool[Any]:
        def tool(x: str) -> str:
            return x

        tool.__name__, tool.__doc__ = name, doc
        made = orc.tool(read_only=True)(tool)
        made.deferrable = True
        return made

    deferred = [
        made("a__issues", "List the issues of a project."),
        made("a__builds", "List the builds of a project."),
        made("b__issues", "List the open issues of a repository."),
    ]
    loaded: list[str] = []
    search = SearchTools(deferred, lambda agent: loaded)
    session = MemorySession()
    ctx = ToolContext(workspace=Workspace(tmp_path), agent="main", events=session)

    async def found(query: str) -> list[str]:
        await search.run(SearchArgs(query=query), ctx)
        return session.state.mcp.loaded.get("main", [])

    assert "- b__issues: List the open issues of a repository." in search.description
    assert await found("b__issues a__builds") == ["a__builds", "b__issues"]
    assert await found("open issues") == ["a__builds", "b__issues", "a__issues"]
    output = await search.run(SearchArgs(query="weather"), ctx)
    assert output.content.startswith("No tool matches 'weather'")
