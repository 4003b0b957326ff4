"""MCP servers in a session run by `orc.run`: each agent type sees only the MCP tools it
names (a `researcher` only its server's read-only ones: the requests its model gets hold
no other tool), a call is a tool call like any other (journaled, its result read by the
model), one the rules ask about is asked about, and a server that fails to start is one
warning while the session goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

import orchestrator as orc
from orchestrator import AgentDefinition, ModelRequest, ScriptedModel, ScriptedReply, ToolResult
from orchestrator.errors import ConfigError
from orchestrator.mcp import McpServer
from tests.mcp.conftest import stdio_server
from tests.scenes import c

RESEARCHER_PROMPT = "You find things out in the docs."


def researcher(docs: McpServer) -> AgentDefinition:
    return AgentDefinition(
        name="researcher",
        description="Finds things out in the docs.",
        prompt=RESEARCHER_PROMPT,
        tools=[*docs.allow("search", "fetch")],
    )


def results(request: ModelRequest) -> list[ToolResult]:
    return [m for m in request.messages if isinstance(m, ToolResult)]


async def test_a_researcher_sees_only_its_servers_read_only_tools(tmp_path: Path) -> None:
    docs, notes = stdio_server("docs"), stdio_server("notes")
    requests: list[ModelRequest] = []

    def respond(request: ModelRequest) -> ScriptedReply:
        requests.append(request)
        if request.agent == "main":
            if request.step == 0:
                ask = c("delegate", agent_type="researcher", description="look", prompt="Look.")
                return ScriptedReply(tool_calls=(ask,))
            if request.step == 1:
                return ScriptedReply(tool_calls=(c("wait_tasks"),))
            return ScriptedReply(text="finished")
        if request.step == 0:
            return ScriptedReply(tool_calls=(c("docs__search", query="trio"),))
        found = results(request)[-1]
        return ScriptedReply(
            tool_calls=(c("complete", summary=f"{found.status}: {found.content}"),)
        )

    result = await orc.run(
        "look it up",
        model=ScriptedModel(respond),
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
        tools=[docs, notes],
        agents=[researcher(docs)],
    )
    assert result.status == "completed"
    theirs = [r for r in requests if r.role == "researcher"]
    assert len(theirs) == 2
    for request in theirs:
        mcp_tools = sorted(t.name for t in request.tools if "__" in t.name)
        assert mcp_tools == ["docs__fetch", "docs__search"]
        assert not {"post_comment", "slow", "crash"} & {
            t.name.split("__")[-1] for t in request.tools
        }
    assert results(theirs[1])[-1].content == "docs found: trio"
    # The main agent has every tool of the servers it was given.
    main_tools = {t.name for t in requests[0].tools}
    assert {"docs__post_comment", "notes__search"} <= main_tools
    # The call was journaled as any tool call is.
    state = orc.load_state(result.session_dir or Path(), warn=pytest.fail)
    assert state.status == "completed"
    journal = (result.session_dir or Path()).joinpath("journal.jsonl").read_text()
    assert '"docs__search"' in journal
    assert "docs found: trio" in journal


async def test_a_call_that_changes_things_is_asked_about(tmp_path: Path) -> None:
    def respond(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return ScriptedReply(tool_calls=(c("docs__post_comment", text="hi"),))
        told = results(request)[-1]
        return ScriptedReply(text=f"{told.status}: {told.content}")

    result = await orc.run(
        "comment",
        model=ScriptedModel(respond),
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
        tools=[stdio_server("docs")],
    )
    assert result.output.startswith("error: docs__post_comment")  # no approver was given
    asked: list[str] = []

    async def approve(request: object) -> bool:
        asked.append(getattr(request, "tool", ""))
        return True

    result = await orc.run(
        "comment",
        model=ScriptedModel(respond),
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
        tools=[stdio_server("docs")],
        approve=approve,
    )
    assert (asked, result.output) == (["docs__post_comment"], "ok: posted hi")


async def test_a_server_that_does_not_start_is_a_warning_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    broken = McpServer.stdio("broken", str(tmp_path / "missing"))
    model = ScriptedModel(lambda r: ScriptedReply(text="fine"))
    with pytest.warns(RuntimeWarning, match=r"^MCP server 'broken' did not start"):
        result = await orc.run(
            "go", model=model, workspace=tmp_path, sessions_dir=tmp_path / "s", tools=[broken]
        )
    assert (result.status, result.output) == ("completed", "fine")


async def test_an_agent_type_naming_a_server_not_given_is_refused(tmp_path: Path) -> None:
    model = ScriptedModel(lambda r: ScriptedReply(text="fine"))
    with pytest.raises(ConfigError, match="names the MCP server 'docs', which this session"):
        await orc.run(
            "go",
            model=model,
            workspace=tmp_path,
            sessions_dir=tmp_path / "s",
            agents=[researcher(stdio_server("docs"))],
        )


async def test_an_mcp_tool_named_as_a_tool_of_the_session_is_refused(tmp_path: Path) -> None:
    @orc.tool(read_only=True)
    def docs__search(query: str) -> str:
        """Mine."""
        return query

    model = ScriptedModel(lambda r: ScriptedReply(text="fine"))
    with pytest.raises(ConfigError, match="'docs__search': the session already has a tool"):
        await orc.run(
            "go",
            model=model,
            workspace=tmp_path,
            sessions_dir=tmp_path / "s",
            tools=[docs__search, stdio_server("docs", tools=["search"])],
        )
