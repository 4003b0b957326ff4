"""The `recall` tool over a real session: what the model reads, what it is refused, and a
recall in a running session of what the agent did a moment before."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pydantic
import pytest

from orchestrator import (
    ListSink,
    LiveSession,
    MessageAdded,
    ModelRequest,
    RunResult,
    RunSettings,
    ScriptedCall,
    ScriptedModel,
    ScriptedReply,
    ToolCallFinished,
    ToolResult,
    UserMessage,
    create_session,
    drive,
    open_session,
)
from orchestrator.errors import ToolFailed
from orchestrator.session.recall import REF_FORMS
from orchestrator.tools import (
    PermissionPolicy,
    ToolContext,
    Workspace,
    approve_all,
    workspace_tools,
)
from orchestrator.tools.recall import Recall, RecallArgs
from tests.session.test_recall import HISTORY, LONG, emit_all


def test_the_tool_reads_and_changes_nothing() -> None:
    tool = Recall(lambda agent, ref, offset: pytest.fail("not called"))
    assert (tool.name, tool.read_only, tool.idempotent, tool.interruptible) == (
        "recall",
        True,
        True,
        True,
    )
    schema = tool.spec().parameters
    assert schema["required"] == ["ref"]
    assert schema["additionalProperties"] is False
    assert '"<seq>.<index>" (e.g. "12.0")' in schema["properties"]["ref"]["description"]
    assert '"<seq>" (e.g. "12")' in schema["properties"]["ref"]["description"]
    assert schema["properties"]["offset"]["minimum"] == 0
    with pytest.raises(pydantic.ValidationError):
        RecallArgs(ref="2.0", offset=-1)


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[LiveSession]:
    root = tmp_path / "sessions"
    session_id, _ = create_session(root, goal="g", model="m", workspace=None)
    async with open_session(root, session_id, warn=pytest.fail) as session:
        await emit_all(session, HISTORY)
        yield session


async def test_what_the_model_reads(live: LiveSession, workspace: Workspace) -> None:
    tool = Recall(live.recall)
    main = ToolContext(workspace=workspace, agent="main")
    output = await tool.run(RecallArgs(ref="2.0"), main)
    assert (output.status, output.content) == (
        "ok",
        'call 2.0: read_file\narguments: {"path":"a.py"}\nresult (seq 3): ok\nprint(\'a\')\n',
    )
    whole = 'call 12.0: shell\narguments: {"command":"seq 1 5000"}\nresult (seq 13): ok\n' + LONG
    rest = await tool.run(RecallArgs(ref="12.0", offset=20_000), main)
    size = len(whole)
    assert rest.content == f"{whole[20_000:]}\n[characters 20000-{size} of {size}: the end]"


@pytest.mark.parametrize(
    ("agent", "ref", "message"),
    [
        ("main", "2,0", 'malformed ref "2,0": a ref is "<seq>.<index>"'),
        ("main", "6.0", 'ref "6.0" is not in your history'),
        ("w1", "2", 'ref "2" is not in your history'),
        ("main", "16.0", "call 16.0 (shell) has no result: it is still running"),
    ],
)
async def test_a_refusal_is_an_error_the_model_reads(
    live: LiveSession, workspace: Workspace, agent: str, ref: str, message: str
) -> None:
    with pytest.raises(ToolFailed) as caught:
        await Recall(live.recall).run(RecallArgs(ref=ref), ToolContext(workspace, agent=agent))
    assert str(caught.value).startswith(message)


async def test_a_running_session_recalls_what_it_did_a_moment_before(tmp_path: Path) -> None:
    """The main agent reads a file, then recalls that call's result and a message folded
    while it was being asked (both still in the journal's queue, or just written), and a
    malformed ref, which is an error result it reads."""
    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="g", model="m", workspace=None)
    (directory / "workspace" / "notes.txt").write_text("remember the milk\n")
    ui = ListSink()
    sessions: list[LiveSession] = []

    async def answer(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return ScriptedReply(
                tool_calls=(ScriptedCall(name="read_file", arguments={"path": "notes.txt"}),)
            )
        if request.step == 1:
            [ref] = [event.ref for event in ui.events if isinstance(event, ToolCallFinished)]
            session = sessions[0]
            note = MessageAdded(agent="main", message=UserMessage(content="noted just now"))
            await session.emit(note)
            seq = session.journal.last_seq
            assert session.journal.durable_seq < seq  # folded, not yet in the file
            recalls = (
                ScriptedCall(name="recall", arguments={"ref": ref}),
                ScriptedCall(name="recall", arguments={"ref": f"{seq}"}),
                ScriptedCall(name="recall", arguments={"ref": "w1"}),
            )
            return ScriptedReply(tool_calls=recalls)
        return ScriptedReply(text="done")

    model = ScriptedModel(answer)
    async with open_session(root, session_id, warn=pytest.fail) as session:
        sessions.append(session)
        # `drive` gives every agent the recall tool, reading this session's journal.
        run = RunSettings(
            model=model,
            tools=workspace_tools(),
            ui=ui,
            policy=PermissionPolicy(),
            approve=approve_all,
        )
        assert await drive(session, run) == RunResult("completed")
    [call] = [
        e for e in ui.events if isinstance(e, ToolCallFinished) and e.result.name == "read_file"
    ]
    results = [m for m in model.requests[2].messages if isinstance(m, ToolResult)]
    seq = int(call.ref.split(".")[0])
    # (The three ran at once: their results are in the order they finished.)
    assert sorted((r.name, r.status, r.content) for r in results[-3:]) == [
        ("recall", "error", f'malformed ref "w1": a ref is {REF_FORMS}'),
        (
            "recall",
            "ok",
            f'call {call.ref}: read_file\narguments: {{"path":"notes.txt"}}\n'
            f"result (seq {seq + 1}): ok\nremember the milk\n",
        ),
        (
            "recall",
            "ok",
            f"seq {seq + 2}: a message added to your context\n[user]\nnoted just now",
        ),
    ]
