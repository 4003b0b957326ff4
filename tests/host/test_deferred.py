"""Deferred approvals from Python: an approver answers `Later`, the call is parked and the
run ends `blocked` with its request; `resume(..., approvals=...)` decides it and the call
runs once (or the model reads why not). The parked call survives the process: a fresh
fold (another process, `sessions show`) finds it, and a resume in a new process runs it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio

import orchestrator as orc
from orchestrator import ModelRequest, ScriptedModel, ScriptedReply, ToolResult
from orchestrator.errors import SessionError
from orchestrator.team.asking import pending_requests
from tests.scenes import c

WS = orc.workspace_tools()  # the tools the scripted agents call


def appender(request: ModelRequest) -> ScriptedReply:
    """Reads a file, then appends a line to log.txt with the shell, then says what it
    was told."""
    if request.step == 0:
        return ScriptedReply(
            tool_calls=(
                c("read_file", path="in.txt"),
                c("shell", command="echo ran >> log.txt"),
            )
        )
    told = "; ".join(
        f"{m.name}: {m.status}: {m.content}" for m in request.messages if isinstance(m, ToolResult)
    )
    return ScriptedReply(text=f"done. {told}")


def later(request: orc.ApprovalRequest) -> orc.Later:
    return orc.Later()


async def parked_session(workspace: Path, root: Path) -> orc.RunResult:
    result = await orc.run(
        "log it", model=ScriptedModel(appender), tools=WS,
        workspace=workspace, sessions_dir=root, approve=later,
    )  # fmt: skip
    assert result.status == "blocked"
    return result


async def test_later_parks_the_call_and_a_resume_that_approves_runs_it_once(
    workspace: Path, tmp_path: Path
) -> None:
    asked: list[orc.ApprovalRequest] = []

    async def later_async(request: orc.ApprovalRequest) -> orc.Later:
        asked.append(request)
        return orc.Later()

    result = await orc.run(
        "log it",
        model=ScriptedModel(appender),
        tools=WS,
        workspace=workspace,
        sessions_dir=tmp_path / "s",
        approve=later_async,
    )
    assert result.status == "blocked"
    [request] = result.approvals
    assert [r.id for r in asked] == [request.id]  # the id is the approver's to keep
    assert request.id.startswith("main:")
    assert (request.tool, request.command, request.who) == (
        "shell",
        "echo ran >> log.txt",
        "the main agent",
    )
    assert "--approve-call " + request.id in result.advice
    assert not (workspace / "log.txt").exists()
    # The read before it ran; the model has not been asked again.
    assert result.output == ""

    again = await orc.resume(
        result.session_dir or "",
        model=ScriptedModel(appender),
        tools=WS,
        approvals={request.id: True},
    )
    assert again.status == "completed"
    assert again.approvals == ()
    assert (workspace / "log.txt").read_text() == "ran\n"
    assert "read_file: ok: hello; shell: ok" in again.output
    # Nothing left to decide: resuming again runs nothing twice.
    done = await orc.resume(result.session_dir or "", model=ScriptedModel(appender), tools=WS)
    assert done.detail == "already finished"
    assert (workspace / "log.txt").read_text() == "ran\n"


async def test_a_denial_with_a_reason_is_what_the_model_reads(
    workspace: Path, tmp_path: Path
) -> None:
    result = await parked_session(workspace, tmp_path / "s")
    [request] = result.approvals
    again = await orc.resume(
        result.session_dir or "",
        model=ScriptedModel(appender),
        tools=WS,
        approvals={request.id: orc.Denied("not on a Friday")},
    )
    assert again.status == "completed"
    assert "shell: error: shell was not approved: not on a Friday; do not retry it" in (
        again.output
    )
    assert not (workspace / "log.txt").exists()


async def test_an_unknown_id_is_an_error_and_no_answer_stays_blocked(
    workspace: Path, tmp_path: Path
) -> None:
    result = await parked_session(workspace, tmp_path / "s")
    [request] = result.approvals
    directory = result.session_dir or Path()
    with pytest.raises(SessionError, match=r"no parked call 'main:99.0'.*" + request.id):
        await orc.resume(
            directory, model=ScriptedModel(appender), tools=WS, approvals={"main:99.0": True}
        )
    # A resume that decides nothing (with an approver even) leaves the call parked.
    still = await orc.resume(
        directory, model=ScriptedModel(appender), tools=WS, approve=orc.approve_all
    )
    assert still.status == "blocked"
    assert [r.id for r in still.approvals] == [request.id]
    assert not (workspace / "log.txt").exists()


async def test_a_parked_call_is_found_by_a_fresh_fold_and_resumed_by_a_new_process(
    workspace: Path, tmp_path: Path
) -> None:
    result = await parked_session(workspace, tmp_path / "s")
    directory = result.session_dir
    assert directory is not None
    # Another reader of the journal (sessions show, a restart) finds the same request.
    state = orc.load_state(directory, warn=pytest.fail)
    assert [r.id for r in pending_requests(state)] == [r.id for r in result.approvals]
    [request] = result.approvals
    program = (
        "import sys, trio, orchestrator as orc\n"
        "from tests.host.test_deferred import appender\n"
        "r = trio.run(lambda: orc.resume(sys.argv[1], model=orc.ScriptedModel(appender),\n"
        "                                tools=orc.workspace_tools(),\n"
        "                                approvals={sys.argv[2]: True}))\n"
        "print(r.status)\n"
    )
    done = await trio.run_process(
        [sys.executable, "-c", program, str(directory), request.id],
        capture_stdout=True,
        cwd=Path(__file__).parents[2],
    )
    assert done.stdout.decode().strip() == "completed"
    assert (workspace / "log.txt").read_text() == "ran\n"


async def test_a_subagents_later_is_nobody_to_ask(workspace: Path, tmp_path: Path) -> None:
    """Only the main agent's calls park: a task's call answered `Later` is refused as
    `unapproved`, as when nobody can be asked."""

    def respond(request: ModelRequest) -> ScriptedReply:
        if request.agent == "main":
            if request.step == 0:
                delegate = c("delegate", agent_type="worker", description="log", prompt="log it")
                return ScriptedReply(tool_calls=(delegate,))
            if request.step == 1:
                return ScriptedReply(tool_calls=(c("wait_tasks"),))
            return ScriptedReply(text="finished")
        if request.step == 0:
            return ScriptedReply(tool_calls=(c("shell", command="echo ran >> log.txt"),))
        told = [m for m in request.messages if isinstance(m, ToolResult)]
        return ScriptedReply(tool_calls=(c("complete", summary=told[-1].status),))

    result = await orc.run(
        "log it", model=ScriptedModel(respond), tools=WS, agents=orc.builtin_agents(),
        workspace=workspace, sessions_dir=tmp_path / "s", approve=later,
    )  # fmt: skip
    assert result.approvals == ()
    assert not (workspace / "log.txt").exists()
    state = orc.load_state(result.session_dir or Path(), warn=pytest.fail)
    assert [r.tool for r in state.refused] == ["shell"]
