"""`run` and `resume`, one call each: a result with the answer, the usage and where the
session is; tools that need approval refused with a reason when no approver is given;
typed approval requests and denial reasons the model reads; instructions for the main
agent; resuming by directory, or by id and root."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import trio

import orchestrator as orc
from orchestrator import ModelRequest, Price, ScriptedModel, ScriptedReply, ToolResult
from orchestrator.errors import ConfigError, SessionNotFound
from orchestrator.prices._table import ROWS
from tests.scenes import c


def results(request: ModelRequest) -> list[ToolResult]:
    return [m for m in request.messages if isinstance(m, ToolResult)]


def writer(request: ModelRequest) -> ScriptedReply:
    """Reads a file, writes one, runs a command, then answers with what it was told."""
    if request.step == 0:
        return ScriptedReply(
            tool_calls=(
                c("read_file", path="in.txt"),
                c("write_file", path="out.txt", content="x"),
                c("shell", command="echo hi > hi.txt"),
            )
        )
    told = "; ".join(f"{m.name}: {m.status}: {m.content}" for m in results(request))
    return ScriptedReply(text=f"done. {told}")


async def test_run_returns_the_answer_the_usage_and_where_the_session_is(
    workspace: Path,
) -> None:
    result = await orc.run(
        "say hello",
        model=ScriptedModel(lambda r: ScriptedReply(text="Hello.")),
        workspace=workspace,
        prices={"scripted": Price(input=1.0, output=2.0)},
    )
    assert (result.status, result.output) == ("completed", "Hello.")
    assert result.usage.input_tokens > 0
    assert result.usage.output_tokens > 0
    expected = (result.usage.input_tokens * 1.0 + result.usage.output_tokens * 2.0) / 1e6
    assert result.cost == pytest.approx(expected)
    # No sessions_dir: a temporary directory of its own, kept for a resume.
    assert result.session_dir is not None
    assert result.session_dir.is_dir()
    assert result.session_dir.name == result.session_id
    assert orc.load_state(result.session_dir, warn=print).status == "completed"


async def test_a_known_model_costs_real_money_with_no_prices_given(workspace: Path) -> None:
    result = await orc.run(
        "say hello",
        model=ScriptedModel(lambda r: ScriptedReply(text="Hello."), name="openai:gpt-4.1"),
        workspace=workspace,
    )
    _, given, output, _, _ = ROWS["gpt-4.1"]  # the known models' table
    expected = (result.usage.input_tokens * given + result.usage.output_tokens * output) / 1e6
    assert result.cost == pytest.approx(expected)
    assert result.cost > 0


async def test_without_an_approver_only_read_only_tools_run_and_the_model_is_told_why(
    workspace: Path, tmp_path: Path
) -> None:
    result = await orc.run(
        "write", model=ScriptedModel(writer), tools=orc.workspace_tools(),
        workspace=workspace, sessions_dir=tmp_path / "s",
    )  # fmt: skip
    assert result.session_dir is not None
    assert result.session_dir.parent == tmp_path / "s"
    assert "read_file: ok: hello" in result.output
    assert "write_file: error: write_file was not approved: no approver given" in result.output
    assert "shell: error: shell was not approved: no approver given" in result.output
    assert not (workspace / "out.txt").exists()
    assert not (workspace / "hi.txt").exists()
    assert result.cost is None  # no prices given


async def test_the_approver_gets_a_typed_request_and_its_reason_reaches_the_model(
    workspace: Path, tmp_path: Path
) -> None:
    asked: list[orc.ApprovalRequest] = []

    def approve(request: orc.ApprovalRequest) -> bool | orc.Denied:
        asked.append(request)
        return request.tool == "write_file" or orc.Denied("no commands on Fridays")

    result = await orc.run(
        "write", model=ScriptedModel(writer), tools=orc.workspace_tools(),
        workspace=workspace, sessions_dir=tmp_path / "s", approve=approve,
    )  # fmt: skip
    assert [(r.agent, r.task, r.tool) for r in asked] == [
        ("main", None, "write_file"),
        ("main", None, "shell"),
    ]
    assert asked[0].arguments == {"path": "out.txt", "content": "x"}
    assert (asked[0].command, asked[1].command) == (None, "echo hi > hi.txt")
    assert asked[1].who == "the main agent"
    assert "write_file: ok" in result.output
    assert "shell was not approved: no commands on Fridays; do not retry it" in result.output
    assert (workspace / "out.txt").read_text() == "x"


async def test_instructions_follow_the_main_agents_system_prompt(workspace: Path) -> None:
    seen: list[str] = []

    def respond(request: ModelRequest) -> ScriptedReply:
        seen.append(str(request.messages[0].content))
        return ScriptedReply(text="ok")

    for tools in ((), orc.workspace_tools()):
        await orc.run(
            "go",
            model=ScriptedModel(respond),
            workspace=workspace,
            instructions="Always answer in French.",
            tools=tools,
        )
    # A plain agent without tools is told only the program's instructions; with the
    # workspace's, where its paths are first.
    assert seen[0] == "Always answer in French."
    assert seen[1].startswith("Paths are relative to the workspace root")
    assert seen[1].endswith("\n\nAlways answer in French.")


async def test_on_event_may_be_a_plain_function(workspace: Path) -> None:
    kinds: list[str] = []
    await orc.run(
        "go",
        model=ScriptedModel(lambda r: ScriptedReply(text="ok")),
        workspace=workspace,
        on_event=lambda event: kinds.append(event.kind),
    )
    assert kinds[0] == "settings"
    assert kinds[-1] == "session_status"
    assert "assistant_replied" in kinds


async def test_a_cancelled_run_resumes_by_directory_or_by_id(
    workspace: Path, tmp_path: Path
) -> None:
    """A run stopped from outside while the approver thinks: the calls in flight end
    `cancelled` (what the model reads on resume), and the session goes on to its end."""
    asked: list[str] = []
    stop = trio.CancelScope()

    async def walk_away(request: orc.ApprovalRequest) -> bool:
        asked.append(request.tool)
        stop.cancel()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    root = tmp_path / "s"
    with stop:
        await orc.run(
            "write", model=ScriptedModel(writer), tools=orc.workspace_tools(),
            workspace=workspace, sessions_dir=root, approve=walk_away,
        )  # fmt: skip
    assert stop.cancelled_caught
    [directory] = root.iterdir()
    assert orc.load_state(directory, warn=print).status == "interrupted"

    async def yes(request: orc.ApprovalRequest) -> bool:
        asked.append(request.tool)
        return True

    with pytest.raises(SessionNotFound, match="sessions_dir="):
        await orc.resume(directory.name, model=ScriptedModel(writer))
    result = await orc.resume(
        directory.name,
        sessions_dir=root,
        model=ScriptedModel(writer),
        approve=yes,
        tools=orc.workspace_tools(),
    )
    assert result.status == "completed"
    assert asked == ["write_file"]
    assert "write_file: cancelled" in result.output
    again = await orc.resume(directory, model=ScriptedModel(writer), approve=yes)
    assert (again.status, again.detail) == ("completed", "already finished")
    assert again.output == result.output


async def test_resuming_a_session_made_with_a_model_object_needs_the_model_again(
    workspace: Path,
) -> None:
    result = await orc.run(
        "go", model=ScriptedModel(lambda r: ScriptedReply(text="ok")), workspace=workspace
    )
    assert result.session_dir is not None
    with pytest.raises(ConfigError, match=r"give it again, resume\(\.\.\., model=\.\.\.\)"):
        await orc.resume(result.session_dir, message="more")


async def test_a_model_spec_is_resolved_and_kept_for_the_resume(
    workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"agents": {"main": [{"text": "first"}, {"text": "second"}]}}')
    result = await orc.run("go", model=f"scripted:{script}", workspace=workspace)
    assert result.output == "first"
    assert result.session_dir is not None
    again = await orc.resume(result.session_dir, message="and then?")
    assert again.output == "second"
    assert re.search(r"and then\?", str(orc.load_state(result.session_dir, warn=print).agents))


async def test_a_function_tool_reports_its_progress_through_its_context(
    workspace: Path,
) -> None:
    tasks: list[str | None] = []

    @orc.tool(read_only=True)
    async def index(ctx: orc.ToolContext) -> str:
        """Index the workspace."""
        tasks.append(ctx.task)
        await ctx.report_progress("half the files", percent=50)
        await ctx.report_progress("done")
        return "indexed"

    def respond(request: ModelRequest) -> ScriptedReply:
        if request.role == "main" and request.step == 0:
            return ScriptedReply(
                tool_calls=(
                    c("index"),
                    c(
                        "delegate",
                        description="index",
                        prompt="Index.",
                        agent_type="indexer",
                        write_scope=[],
                    ),
                )
            )
        if request.role == "main" and request.step == 1:
            return ScriptedReply(tool_calls=(c("wait_tasks"),))
        if request.role == "main":
            return ScriptedReply(text="ok")
        if request.step == 0:
            return ScriptedReply(tool_calls=(c("index"),))
        return ScriptedReply(tool_calls=(c("complete", summary="indexed"),))

    seen: list[orc.Event] = []
    worker = orc.AgentDefinition(name="indexer", prompt="Index.", tools=(index,))
    await orc.run(
        "index",
        model=ScriptedModel(respond),
        workspace=workspace,
        agents=[worker],
        on_event=seen.append,
    )
    progress = [e for e in seen if isinstance(e, orc.ToolProgress)]
    main = [(e.tool, e.message, e.percent) for e in progress if e.agent == "main"]
    assert main == [("index", "half the files", 50), ("index", "done", None)]
    started = [e.ref for e in seen if isinstance(e, orc.ToolCallStarted) and e.agent == "main"]
    assert {e.ref for e in progress if e.agent == "main"} == {started[0]}
    assert sorted(tasks, key=str) == [None, "t1"]
    assert [e.agent for e in progress].count("t1") == 2
