"""What a real server (server_app.py) asks the client while its tool runs, in sessions run
by `orc.run`: the person (elicitation: the library host's `answer`; nobody, and the
session stops blocked until a resume's message answers it, after any task's question
waiting too), a model's completion (sampling: refused unless the server may, then the
agent's model under the session's model-call slots, its usage counted), its roots (the
agent's workspace or write scope); and its resources read through a tool (docs/mcp.md,
"What a server may ask")."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import orjson
import pytest
import trio
import trio.testing

import orchestrator as orc
from orchestrator import (
    AgentStarted,
    ModelRequest,
    ScriptedModel,
    ScriptedReply,
    ToolResult,
    UserMessage,
)
from orchestrator.errors import ToolFailed
from orchestrator.mcp import McpServer, open_servers
from orchestrator.mcp.asked import Calling
from orchestrator.mcp.sampling import Sampler
from orchestrator.messages import Usage
from orchestrator.session import MemorySession
from orchestrator.team import open_team
from orchestrator.team.asking import Question
from orchestrator.team.queries import MAIN
from orchestrator.tools import ToolContext, Workspace
from orchestrator.tools.permissions import Denied
from tests.mcp.conftest import APP, stdio_server
from tests.scenes import Scene, c


def yes(request: object) -> bool:
    return True


def told(request: ModelRequest) -> str:
    """The last tool result the model reads: `status: content`."""
    result = [m for m in request.messages if isinstance(m, ToolResult)][-1]
    return f"{result.status}: {result.content}"


def records(session_dir: Path | None, *kinds: str) -> list[dict[str, object]]:
    lines = (session_dir or Path()).joinpath("journal.jsonl").read_bytes().splitlines()
    found = [orjson.loads(line) for line in lines]
    return [r for r in found if r.get("k") in kinds]


def asking(*questions: str) -> ScriptedModel:
    """A main agent that calls `docs__ask` with each question in turn, then says what
    the last call told it."""

    def respond(request: ModelRequest) -> ScriptedReply:
        if request.step < len(questions):
            return ScriptedReply(tool_calls=(c("docs__ask", question=questions[request.step]),))
        return ScriptedReply(text=told(request))

    return ScriptedModel(respond)


async def test_a_servers_question_goes_to_the_library_hosts_answer(tmp_path: Path) -> None:
    asked: list[Question] = []
    replies: list[str | Denied] = ["blue", Denied("not telling")]

    def answer(question: Question) -> str | Denied:
        asked.append(question)
        return replies[len(asked) - 1]

    result = await orc.run(
        "ask",
        model=asking("Your colour?", "Your other colour?"),
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
        tools=[stdio_server("docs")],
        approve=yes,
        answer=answer,
    )
    assert result.status == "completed", result.detail
    first = asked[0]
    assert (first.kind, first.server, first.task, first.text) == (
        "elicitation",
        "docs",
        "main",
        "Your colour?",
    )
    assert first.options == ("choice",)
    assert first.schema is not None
    assert first.schema["required"] == ["choice"]
    assert result.output == "ok: decline: "
    answered = records(result.session_dir, "mcp_elicit_answered")
    assert [(r["action"], r.get("content"), r["by"]) for r in answered] == [
        ("accept", {"choice": "blue"}, "host"),
        ("decline", None, "host"),
    ]
    elicited = records(result.session_dir, "mcp_elicited")
    assert [(r["tool"], r["message"], r.get("waiting", False)) for r in elicited] == [
        ("ask", "Your colour?", False),
        ("ask", "Your other colour?", False),
    ]
    # The first call's result, as the model read it.
    journal = (result.session_dir or Path()).joinpath("journal.jsonl").read_text()
    assert "accept: blue" in journal


async def test_headless_a_servers_question_blocks_the_session_until_a_resume_answers_it(
    tmp_path: Path,
) -> None:
    server = stdio_server("docs")
    result = await orc.run(
        "ask",
        model=asking("Your colour?"),
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
        tools=[server],
        approve=yes,
    )
    assert result.status == "blocked"
    assert "docs__ask" in result.detail
    assert result.advice.startswith("MCP server 'docs' asks the person: 'Your colour?'; ")
    assert result.output.startswith(
        "error: MCP server 'docs' asked the person during ask ('Your colour?'), and nobody "
        "can answer now: the session stops blocked on it"
    )
    [waiting] = records(result.session_dir, "mcp_elicited")
    assert waiting["waiting"] is True

    # The person answers with the resume's message; the model calls again, and the
    # server gets the answer without anyone being asked.
    def respond(request: ModelRequest) -> ScriptedReply:
        if request.step == 2:
            return ScriptedReply(tool_calls=(c("docs__ask", question="Your colour?"),))
        return ScriptedReply(text=told(request))

    again = await orc.resume(
        result.session_dir or Path(),
        model=ScriptedModel(respond),
        message="green",
        tools=[server],
        approve=yes,
    )
    assert again.status == "completed", again.detail
    assert again.output == "ok: accept: green"
    answered = records(again.session_dir, "mcp_elicit_answered")
    assert [(r.get("ref", "") != "", r["content"], r.get("by", "person")) for r in answered] == [
        (False, {"choice": "green"}, "person"),
        (True, {"choice": "green"}, "journal"),
    ]
    assert len(records(again.session_dir, "mcp_elicited")) == 1  # not asked again


def sampling(prompt: str) -> ScriptedModel:
    """A main agent that calls `docs__sample`, its completion scripted as `main/sampling`."""

    def respond(request: ModelRequest) -> ScriptedReply:
        if request.agent == "main/sampling":
            assert request.role == "main"
            said = [getattr(m, "content", "") for m in request.messages]
            return ScriptedReply(
                text=f"Hello ({' / '.join(said)})", usage=Usage(input_tokens=7, output_tokens=3)
            )
        if request.step == 0:
            return ScriptedReply(
                tool_calls=(c("docs__sample", prompt=prompt),),
                usage=Usage(input_tokens=100, output_tokens=10),
            )
        return ScriptedReply(text=told(request), usage=Usage(input_tokens=200, output_tokens=20))

    return ScriptedModel(respond, name="scripted:mine")


async def test_sampling_is_refused_unless_the_server_may_then_the_agents_model_answers(
    tmp_path: Path,
) -> None:
    refused = await orc.run(
        "sample",
        model=sampling("Hi"),
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
        tools=[stdio_server("docs")],
        approve=yes,
    )
    assert refused.output == (
        "error: MCP server 'docs' failed calling sample: sampling is not allowed for MCP "
        "server 'docs' (`sampling = true` in [mcp.servers.docs] allows it)"
    )
    assert refused.usage == Usage(input_tokens=300, output_tokens=30)

    allowed = McpServer.stdio(
        "docs", sys.executable, [str(APP), "stdio", "--name", "docs"], sampling=True
    )
    result = await orc.run(
        "sample",
        model=sampling("Hi"),
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
        tools=[allowed],
        approve=yes,
    )
    assert result.status == "completed", result.detail
    assert result.output == "ok: sampled by scripted:mine: Hello (Be brief. / Hi)"
    # The completion's tokens count with the agent's own.
    assert result.usage == Usage(input_tokens=307, output_tokens=33)
    [sampled] = records(result.session_dir, "mcp_sampled")
    assert (sampled["server"], sampled["model"]) == ("docs", "scripted:mine")
    state = orc.load_state(result.session_dir or Path())
    assert state.usage_by_model["scripted:mine"] == result.usage


async def test_resources_are_read_through_a_tool_only_the_servers_takers_see(
    tmp_path: Path,
) -> None:
    server = McpServer.stdio("docs", sys.executable, [str(APP), "stdio", "--resources"])
    async with open_servers([server]) as opened:
        [reader] = [tool for tool in opened.tools if tool.name == "docs__read_resource"]
        assert (reader.read_only, reader.idempotent) == (True, True)
        assert reader.description.endswith(
            "Its resources:\n- docs://guide: guide (How to use the docs.)\n- docs://logo: logo"
        )
        ctx = ToolContext(workspace=Workspace(tmp_path))
        read = await reader.run(reader.args_model.model_validate({"uri": "docs://guide"}), ctx)
        assert (read.status, read.content) == ("ok", "The guide of docs.")
        logo = await reader.run(reader.args_model.model_validate({"uri": "docs://logo"}), ctx)
        assert logo.content == "[binary content of docs://logo (image/png) not shown]"
        # An agent type sees it as one of the server's tools, by its globs.
        assert "docs__read_resource" not in opened.names(["mcp:docs/search"])
        assert "docs__read_resource" in opened.names(["mcp:docs/*"])
    # A server without resources gives no such tool.
    async with open_servers([stdio_server("docs")]) as opened:
        assert "docs__read_resource" not in {tool.name for tool in opened.tools}


async def test_the_roots_offered_are_the_agents_write_scope_or_else_its_workspace(
    tmp_path: Path,
) -> None:
    async with open_servers([stdio_server("docs")]) as opened:
        [roots] = [tool for tool in opened.tools if tool.name == "docs__roots"]
        args = roots.args_model.model_validate({})
        workspace = Workspace(tmp_path)
        main = await roots.run(args, ToolContext(workspace=workspace))
        assert main.content == f"workspace={workspace.root.as_uri()}"
        scoped = ToolContext(workspace=workspace, agent="t1", write_scope=("src",))
        task = await roots.run(args, scoped)
        assert task.content == f"src={(workspace.root / 'src').as_uri()}"
        # A pattern is offered as the directory before its first wildcard; a task that
        # writes nowhere, as the workspace it reads.
        globbed = ToolContext(workspace=workspace, agent="t2", write_scope=("docs/*.md", "src"))
        task = await roots.run(args, globbed)
        assert task.content == (
            f"docs={(workspace.root / 'docs').as_uri()} src={(workspace.root / 'src').as_uri()}"
        )
        reader = ToolContext(workspace=workspace, agent="t3", write_scope=())
        task = await roots.run(args, reader)
        assert task.content == f"workspace={workspace.root.as_uri()}"


async def test_the_time_the_person_takes_is_not_the_servers(tmp_path: Path) -> None:
    # The server may take 1 s a call; the person answers after 1.5 s, and the call
    # goes on: its limit stops while the client answers.
    async def answer(question: Question) -> str:
        await trio.sleep(1.5)  # (the person thinking: the very thing under test)
        return "slow"

    result = await orc.run(
        "ask",
        model=asking("Your colour?"),
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
        tools=[stdio_server("docs", timeout=1.0)],
        approve=yes,
        answer=answer,
    )
    assert result.output == "ok: accept: slow"


async def test_a_streamable_http_servers_question_is_answered_alike(
    tmp_path: Path, http_url: str
) -> None:
    result = await orc.run(
        "ask",
        model=ScriptedModel(
            lambda r: (
                ScriptedReply(tool_calls=(c("web__ask", question="Colour?"),))
                if r.step == 0
                else ScriptedReply(text=told(r))
            )
        ),
        workspace=tmp_path,
        sessions_dir=tmp_path / "s",
        tools=[McpServer.http("web", http_url)],
        approve=yes,
        answer=lambda question: {"choice": f"{question.server} blue"},
    )
    assert result.output == "ok: accept: web blue"


async def test_a_completion_waits_for_a_model_call_slot_as_the_agents_calls_do(
    tmp_path: Path,
) -> None:
    """A server's sampling takes one of the session's model-call slots: with the one
    slot there is (`max_model_calls = 1`) held by a stream, the completion's request
    reaches the model only once that stream closes."""
    import mcp_types as types

    asked: list[str] = []

    def brain(request: ModelRequest) -> ScriptedReply:
        asked.append(request.agent)
        return ScriptedReply(text="Hello")

    scene = Scene(Workspace(tmp_path), {MAIN: brain, f"{MAIN}/sampling": brain}, max_model_calls=1)
    server = McpServer.stdio("docs", sys.executable, sampling=True)  # (only named, not run)
    text = types.TextContent(type="text", text="Hi")
    params = types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=text)], max_tokens=50
    )
    answers = []
    started = AgentStarted(agent=MAIN, role="main", messages=(UserMessage(content="g"),))
    await scene.session.emit(started)  # (the completion's usage is counted to the agent)

    async with open_team(scene.session, scene.session, scene.wiring, scene.seat) as team:
        context = team.turn_deps(MAIN).context
        model = context.model
        assert model is not None  # the agent's, as its turns call it
        calling = Calling.of(context.for_call("c1", "docs__sample", scene.session), "sample")

        async def sample() -> None:
            answers.append(await Sampler(scene.session)(server, calling, params))

        async with contextlib.AsyncExitStack() as held:
            await held.enter_async_context(model.stream(ModelRequest(messages=[], agent=MAIN)))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sample)
                await trio.testing.wait_all_tasks_blocked()
                assert asked == [MAIN]  # the completion waits for the slot
                await held.aclose()  # the stream closes: its slot is free
        assert asked == [MAIN, f"{MAIN}/sampling"]
    [answer] = answers
    assert answer.content.text == "Hello"
    assert scene.state.mcp.sampled == {MAIN: 1}


async def test_a_call_whose_agent_has_no_model_is_refused_a_completion(tmp_path: Path) -> None:
    # A program that runs a server's tool itself, with a context that names no model.
    allowed = McpServer.stdio(
        "docs", sys.executable, [str(APP), "stdio", "--name", "docs"], sampling=True
    )
    async with open_servers([allowed]) as opened:
        opened.answering(MemorySession(), None, by="host")
        [sample] = [tool for tool in opened.tools if tool.name == "docs__sample"]
        args = sample.args_model.model_validate({"prompt": "Hi"})
        with pytest.raises(ToolFailed, match="the client has no model to ask"):
            await sample.run(args, ToolContext(workspace=Workspace(tmp_path)))


def asks_both(request: ModelRequest) -> ScriptedReply:
    """A main agent that delegates t1 and calls `docs__ask` (nobody answers: the question
    waits), then waits for t1, whose question (`ask_decision`) it never answers."""
    if request.agent == "t1":
        if request.step == 0:
            return ScriptedReply(tool_calls=(c("ask_decision", question="which database?"),))
        return ScriptedReply(tool_calls=(c("complete", summary="done with the answer"),))
    if request.step == 0:
        delegate = c("delegate", description="sub", prompt="do", agent_type="explorer")
        return ScriptedReply(tool_calls=(delegate, c("docs__ask", question="Your colour?")))
    if request.step == 1:
        return ScriptedReply(tool_calls=(c("wait_tasks"),))
    return ScriptedReply(text=f"noted ({request.step})")  # (each reply its own)


async def test_a_resumes_message_answers_the_question_its_advice_named_and_no_other(
    tmp_path: Path,
) -> None:
    # A task's question and a server's both wait for the person: the result names the
    # task's, and the message that answers it is not taken as the server's answer too.
    team = {"agents": orc.builtin_agents(), "tools": [*orc.workspace_tools(), stdio_server("docs")]}
    where = {"workspace": tmp_path, "sessions_dir": tmp_path / "s", "approve": yes}
    first = await orc.run("go", model=ScriptedModel(asks_both), **team, **where)
    assert first.status == "blocked", first.detail
    assert first.advice.startswith("answer task t1: ")
    assert orc.load_state(first.session_dir or Path()).mcp.waiting

    session = first.session_dir or Path()
    again = await orc.resume(session, model=ScriptedModel(asks_both), message="postgres", **team)
    state = orc.load_state(session)
    task = state.tasks.get("t1")
    assert task is not None
    assert task.state == "completed"
    assert "postgres" in "\n".join(
        str(getattr(m, "content", "")) for m in state.agents["t1"].messages
    )
    # The server's question still waits, and the result now names it.
    assert records(session, "mcp_elicit_answered") == []
    assert [q.message for q in state.mcp.waiting.values()] == ["Your colour?"]
    assert again.status == "blocked", again.detail
    assert again.advice.startswith("MCP server 'docs' asks the person: 'Your colour?'; ")
