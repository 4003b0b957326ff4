"""A reply cut at the output limit (issue 41, item 2), through the turn loop with the
scripted model (`stop_reason: max_tokens`, and `then` for the asks that follow): cut
text is continued and joined into one journaled reply; a cut tool call is asked for again
once with a larger limit, and, cut again, is never run but answered as too long to emit;
never more than two recoveries a reply, the tokens of every attempt in its usage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import orchestrator as orc
from orchestrator import AssistantMessage, ReplyAtLimit, ToolResult, Usage
from orchestrator.agent import run_turn
from orchestrator.agent.parsing import Refused, parse_call
from orchestrator.agent.recovery import GO_ON, OUTPUT_CAP, larger_limit
from orchestrator.messages import ToolCall, UserMessage
from orchestrator.models import ModelRequest
from orchestrator.models.base import at_output_limit
from orchestrator.models.scripted import ScriptedModel, parse_script
from orchestrator.state.events import AssistantReplied
from orchestrator.tools import Workspace, workspace_tools
from tests.conftest import MakeDeps, final_text
from tests.scenes import call, scripted

CUT_ARGS = '{"path": "big.txt", "content": "line 1\\nline 2\\nli'


def cut_call(**more: Any) -> dict[str, Any]:
    """A reply cut inside a write_file call."""
    return {
        "tool_calls": [{"name": "write_file", "arguments": CUT_ARGS}],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 100, "output_tokens": 1000},
        **more,
    }


def tokens(output: int, given: int = 100) -> dict[str, int]:
    return {"input_tokens": given, "output_tokens": output}


def replied(sink_events: list[Any]) -> list[AssistantMessage]:
    return [e.message for e in sink_events if isinstance(e, AssistantReplied)]


def notices(sink_events: list[Any]) -> list[tuple[str, int, int | None]]:
    return [(e.how, e.recovery, e.max_tokens) for e in sink_events if isinstance(e, ReplyAtLimit)]


@pytest.mark.parametrize("said", ["max_tokens", "length", "max_output_tokens"])
def test_each_providers_word_for_the_output_limit_is_one_thing(said: str) -> None:
    assert at_output_limit(said)


@pytest.mark.parametrize("said", [None, "end_turn", "tool_use", "stop", "refusal"])
def test_other_stop_reasons_are_not_the_output_limit(said: str | None) -> None:
    assert not at_output_limit(said)


async def test_cut_text_is_continued_and_joined_into_one_reply(make_deps: MakeDeps) -> None:
    model = scripted(
        {
            "text": "The plan has three par",
            "stop_reason": "max_tokens",
            "usage": tokens(1000),
            "then": [{"text": "ts: read, write, test.", "usage": tokens(7, given=1030)}],
        }
    )
    state, deps, sink = make_deps(model, max_tokens=1000)
    assert await final_text(state, deps) == "The plan has three parts: read, write, test."
    # One reply journaled, whole, its usage that of both pieces.
    [journaled] = replied(sink.events)
    assert journaled.text == "The plan has three parts: read, write, test."
    assert journaled.usage == Usage(input_tokens=1130, output_tokens=1007)
    assert journaled.stop_reason == "end_turn"
    assert notices(sink.events) == [("continue", 1, None)]
    # The second request: the context, the text so far as the model's, then the note.
    first, second = model.requests
    assert (second.step, second.recovery) == (first.step, 1)
    assert list(second.messages) == [
        *first.messages,
        AssistantMessage(text="The plan has three par"),
    ]
    assert second.note == GO_ON
    assert second.max_tokens == 1000
    # Nothing of the asking is kept: the context holds the goal and the one reply.
    assert [m.role for m in state.messages] == ["system", "user", "assistant"]
    assert not any(GO_ON in m.content for m in state.messages)


async def test_a_note_of_the_first_request_comes_before_the_text_so_far(
    make_deps: MakeDeps,
) -> None:
    model = scripted({"text": "Half", "stop_reason": "max_tokens", "then": [{"text": " whole"}]})
    state, deps, _ = make_deps(model, note=lambda agent: "a call runs in the background")
    await run_turn(state, deps)
    first, second = model.requests
    assert first.note == "a call runs in the background"
    assert list(second.messages[-2:]) == [
        UserMessage(content="a call runs in the background"),
        AssistantMessage(text="Half"),
    ]
    assert second.note == GO_ON


async def test_a_cut_call_is_asked_again_with_double_the_limit_and_runs_once_whole(
    make_deps: MakeDeps, workspace: Workspace
) -> None:
    whole = call("write_file", path="big.txt", content="line 1\nline 2\nline 3\n")
    model = scripted(
        cut_call(then=[{"tool_calls": [whole], "usage": tokens(1500)}]),
        {"text": "written"},
    )
    state, deps, sink = make_deps(model, max_tokens=1000)
    assert await final_text(state, deps) == "written"
    assert [(r.max_tokens, r.recovery) for r in model.requests] == [(1000, 0), (2000, 1), (1000, 0)]
    # The same request, but for its limit.
    assert model.requests[1].messages == model.requests[0].messages
    assert notices(sink.events) == [("larger", 1, 2000)]
    first = replied(sink.events)[0]
    assert first.tool_calls[0].arguments.endswith('line 3\\n"}')
    assert first.usage == Usage(input_tokens=200, output_tokens=2500)  # both attempts
    assert (workspace.root / "big.txt").read_text() == "line 1\nline 2\nline 3\n"
    [result] = [m for m in state.messages if isinstance(m, ToolResult)]
    assert result.status == "ok"


async def test_a_call_cut_again_is_never_run_and_the_model_is_told_to_write_in_parts(
    make_deps: MakeDeps, workspace: Workspace
) -> None:
    model = scripted(
        cut_call(then=[cut_call(usage=tokens(2000))]),
        {"text": "I will write it in parts"},
    )
    state, deps, sink = make_deps(model, max_tokens=1000)
    assert await final_text(state, deps) == "I will write it in parts"
    assert len(model.requests) == 3  # asked again once, then the model is told
    assert not (workspace.root / "big.txt").exists()
    assert notices(sink.events) == [("larger", 1, 2000), ("too_long", 0, None)]
    [journaled, _] = replied(sink.events)
    [cut] = journaled.tool_calls
    # Journaled without the arguments that never came whole, marked as cut.
    assert (cut.name, cut.arguments, cut.cut) == ("write_file", "{}", len(CUT_ARGS))
    assert journaled.usage == Usage(input_tokens=200, output_tokens=3000)
    [result] = [m for m in state.messages if isinstance(m, ToolResult)]
    assert result.status == "error"
    assert "was not run: the call was too long to emit" in result.content
    assert "write a long file in parts" in result.content
    assert "JSON" not in result.content  # never shown to the model as malformed
    assert model.requests[2].messages[-1] == result
    started = [e for e in sink.events if isinstance(e, orc.ToolCallStarted)]
    assert [e.call.cut for e in started] == [len(CUT_ARGS)]


async def test_a_whole_call_before_the_cut_one_runs(
    make_deps: MakeDeps, workspace: Workspace
) -> None:
    first = call("write_file", path="small.txt", content="ok\n")
    cut = cut_call()
    cut["tool_calls"] = [first, *cut["tool_calls"]]
    model = scripted({**cut, "then": [cut]}, {"text": "done"})
    state, deps, _ = make_deps(model, max_tokens=1000)
    await run_turn(state, deps)
    assert (workspace.root / "small.txt").read_text() == "ok\n"
    assert not (workspace.root / "big.txt").exists()
    results = [(m.name, m.status) for m in state.messages if isinstance(m, ToolResult)]
    assert results == [("write_file", "ok"), ("write_file", "error")]


async def test_at_most_two_recoveries_a_reply(make_deps: MakeDeps) -> None:
    cut = {"stop_reason": "max_tokens", "usage": tokens(10)}
    model = scripted(
        {"text": "one ", **cut, "then": [{"text": "two ", **cut}, {"text": "three", **cut}]}
    )
    state, deps, sink = make_deps(model, max_tokens=10)
    await run_turn(state, deps)
    assert [r.recovery for r in model.requests] == [0, 1, 2]  # not a third time
    [first] = replied(sink.events)
    # Still cut after two recoveries: the text is what came, its stop reason says so.
    assert (first.text, first.stop_reason) == ("one two three", "max_tokens")
    assert first.usage == Usage(input_tokens=300, output_tokens=30)
    assert notices(sink.events) == [("continue", 1, None), ("continue", 2, None)]


async def test_continued_text_whose_call_is_cut_twice_stops_at_the_bound(
    make_deps: MakeDeps, workspace: Workspace
) -> None:
    """Text cut, continued (1), its call cut, asked larger (2), cut again: told."""
    model = scripted(
        {
            "text": "First I write",
            "stop_reason": "max_tokens",
            "then": [cut_call(text=" the file."), cut_call(text=" the file.")],
        },
        {"text": "ok"},
    )
    state, deps, sink = make_deps(model, max_tokens=1000)
    await run_turn(state, deps)
    assert [(r.recovery, r.max_tokens) for r in model.requests] == [
        (0, 1000),
        (1, 1000),
        (2, 2000),
        (0, 1000),
    ]
    assert notices(sink.events) == [
        ("continue", 1, None),
        ("larger", 2, 2000),
        ("too_long", 0, None),
    ]
    journaled = replied(sink.events)[0]
    assert journaled.text == "First I write the file."  # once: the dropped attempt's is not kept
    assert journaled.tool_calls[0].cut == len(CUT_ARGS)
    assert not (workspace.root / "big.txt").exists()


async def test_a_model_at_its_own_output_limit_is_not_asked_again(
    make_deps: MakeDeps,
) -> None:
    # claude-3-5-haiku emits at most 8,192 tokens (models/windows.py).
    script = parse_script({"agents": {"main": [cut_call(), {"text": "ok"}]}})
    model = ScriptedModel(script, name="anthropic:claude-3-5-haiku-20241022")
    state, deps, sink = make_deps(model, max_tokens=8192)
    await run_turn(state, deps)
    assert [r.recovery for r in model.requests] == [0, 0]
    assert notices(sink.events) == [("too_long", 0, None)]


def test_the_larger_limit_is_double_up_to_the_models_own_else_the_cap() -> None:
    cut = AssistantMessage(stop_reason="max_tokens", usage=Usage(output_tokens=8192))
    unset = ModelRequest(messages=())
    # No limit in the request: the adapter's default, which the output tokens show.
    assert larger_limit(unset, cut, "anthropic:claude-test") == 16_384
    assert larger_limit(ModelRequest(messages=(), max_tokens=20_000), cut, "x:y") == OUTPUT_CAP
    assert larger_limit(ModelRequest(messages=(), max_tokens=OUTPUT_CAP), cut, "x:y") is None
    assert larger_limit(unset, cut, "openai:gpt-4o") == 16_384  # its own limit
    assert larger_limit(unset, cut, "anthropic:claude-sonnet-4-5") == 16_384
    big = AssistantMessage(stop_reason="max_tokens", usage=Usage(output_tokens=40_000))
    assert larger_limit(unset, big, "anthropic:claude-sonnet-4-5") == 64_000
    assert larger_limit(unset, AssistantMessage(stop_reason="max_tokens"), "x:y") == OUTPUT_CAP


def test_a_call_marked_cut_is_refused_without_reading_its_arguments() -> None:
    call = ToolCall(id="c1", name="write_file", arguments="{}", cut=51_234)
    parsed = parse_call(call, workspace_tools())
    assert isinstance(parsed, Refused)
    assert "too long to emit" in parsed.error
    assert "51,234 characters" in parsed.error


async def test_the_journal_keeps_the_joined_reply_and_the_cut_mark(tmp_path: Path) -> None:
    """Through a session on disk: what resume reads is the one joined reply, and a call
    cut for good stays unrun and answered."""
    model = scripted(
        {
            "text": "Par",
            "stop_reason": "max_tokens",
            "then": [cut_call(text="t one."), cut_call(text="t one.")],
        },
        {"text": "done"},
    )
    result = await orc.run("g", model=model, sessions_dir=tmp_path)
    assert result.status == "completed"
    assert result.session_dir is not None
    state = orc.load_state(result.session_dir, warn=pytest.fail)
    messages = state.agents["main"].messages
    replies = [m for m in messages if isinstance(m, AssistantMessage)]
    assert [m.text for m in replies] == ["Part one.", "done"]
    assert replies[0].tool_calls[0].cut == len(CUT_ARGS)
    [answer] = [m for m in messages if isinstance(m, ToolResult)]
    assert "too long to emit" in answer.content
