"""The sink in front of the journal and the screen redacts every secret value, whoever
wrote it (issue 19, item 2): streamed text held back while it could be a secret's start,
records scrubbed before they are folded, and a reply's calls run redacted."""

from __future__ import annotations

from pathlib import Path

import orjson

from orchestrator import (
    AgentStarted,
    ApprovalRequest,
    AssistantMessage,
    AssistantReplied,
    ListSink,
    RunSettings,
    ScriptedModel,
    TextStreamed,
    ToolCall,
    TurnEnded,
    UserMessage,
    create_session,
    drive,
    open_session,
)
from orchestrator.models.scripted import parse_script
from orchestrator.redaction import Redactor
from orchestrator.state.scrub import Scrubbed
from orchestrator.tools import PermissionPolicy, workspace_tools

KEY = "sk-test-0123456789abcdef"
REDACTOR = Redactor.of(["OPENAI_API_KEY"], {"OPENAI_API_KEY": KEY})


def shown(sink: ListSink, agent: str = "main") -> str:
    return "".join(e.text for e in sink.events if isinstance(e, TextStreamed) and e.agent == agent)


async def test_a_secret_split_across_streamed_pieces_is_never_shown() -> None:
    sink = ListSink()
    scrubbed = Scrubbed(sink, REDACTOR)
    for piece in ("the key: sk-te", "st-0123", "456789abcdef, and sk-"):
        await scrubbed.emit(TextStreamed(agent="main", text=piece))
    # "sk-" could still be the start of the key: it waits for the agent's next event.
    assert shown(sink) == "the key: [redacted OPENAI_API_KEY], and "
    await scrubbed.emit(TurnEnded(agent="main", reason="completed", rounds=1))
    assert shown(sink) == "the key: [redacted OPENAI_API_KEY], and sk-"
    assert KEY not in repr(sink.events)


async def test_held_text_of_one_agent_does_not_wait_for_another() -> None:
    sink = ListSink()
    scrubbed = Scrubbed(sink, REDACTOR)
    await scrubbed.emit(TextStreamed(agent="t1", text="a sk-test"))
    await scrubbed.emit(TextStreamed(agent="main", text="hello"))
    assert shown(sink, "t1") == "a "
    assert shown(sink, "main") == "hello"
    await scrubbed.emit(TextStreamed(agent="t1", text="-0123456789abcdef!"))
    assert shown(sink, "t1") == "a [redacted OPENAI_API_KEY]!"


async def test_records_are_scrubbed_wherever_the_secret_sits() -> None:
    sink = ListSink()
    scrubbed = Scrubbed(sink, REDACTOR)
    reply = AssistantMessage(
        text=f"key {KEY}",
        # In the arguments' JSON text, and escaped there inside a longer string.
        tool_calls=(ToolCall(id="c1", name="shell", arguments=f'{{"command": "echo {KEY}"}}'),),
    )
    await scrubbed.emit(AssistantReplied(agent="main", message=reply, model="m"))
    said = (UserMessage(content=f"use {KEY}\n\tplease"),)
    await scrubbed.emit(AgentStarted(agent="t1", role="worker", messages=said))
    untouched = TurnEnded(agent="main", reason="completed", rounds=1)
    await scrubbed.emit(untouched)
    replied, started, ended = sink.events
    assert isinstance(replied, AssistantReplied)
    assert isinstance(started, AgentStarted)
    assert replied.message.text == "key [redacted OPENAI_API_KEY]"
    assert orjson.loads(replied.message.tool_calls[0].arguments) == {
        "command": "echo [redacted OPENAI_API_KEY]"
    }
    assert started.messages[0].content == "use [redacted OPENAI_API_KEY]\n\tplease"
    assert ended is untouched  # nothing to hide: the same event, not a copy


def test_the_redactor_holds_only_what_could_start_a_secret() -> None:
    assert REDACTOR.held("abc") == 0
    assert REDACTOR.held("x sk-t") == 4
    assert REDACTOR.held(f"x {KEY}") == 0  # whole: redacted now, not held
    assert Redactor().held("sk-t") == 0
    assert not Redactor()


async def test_calls_run_and_are_approved_as_journaled_redacted(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    call = {"name": "write_file", "arguments": {"path": "k.txt", "content": f"K={KEY}"}}
    script = {"agents": {"main": [{"tool_calls": [call]}, {"text": "done"}]}}
    (tmp_path / "script.json").write_bytes(orjson.dumps(script))
    model = f"scripted:{tmp_path / 'script.json'}"
    root = tmp_path / "sessions"
    session_id, _ = create_session(root, goal="g", model=model, workspace=workspace)
    asked: list[ToolCall] = []

    async def approve(request: ApprovalRequest) -> bool:
        asked.append(request.call)
        return True

    async with open_session(root, session_id, warn=lambda _: None) as live:
        await drive(
            live,
            RunSettings(
                model=ScriptedModel(parse_script(script)),
                tools=workspace_tools(),
                ui=ListSink(),
                policy=PermissionPolicy(),
                approve=approve,
                redact=REDACTOR,
            ),
        )
    [seen] = asked
    assert KEY not in seen.arguments
    assert "[redacted OPENAI_API_KEY]" in seen.arguments
    assert (workspace / "k.txt").read_text() == "K=[redacted OPENAI_API_KEY]"
