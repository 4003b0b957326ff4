"""A reply cut at the output limit (issue 41, item 2), through the turn loop and each real
adapter against a loopback server that stops as the provider does: chat completions'
`finish_reason: length`, Anthropic's `stop_reason: max_tokens`, the Responses API's
`response.incomplete` for `max_output_tokens`. What the server was sent is what is
checked: the continuation request, the larger limit, the advice in the call's result."""

from __future__ import annotations

from typing import Any

import httpx
from adapter_setup import http_options
from provider_server import LoopbackServer, Reply, Sleeps
from responses_events import Stream, usage
from sdk_types import (
    OPENAI_DONE,
    anthropic_text,
    anthropic_tool_use,
    message_delta,
    openai_call_delta,
    openai_chunk,
    openai_text,
    openai_tool_call,
    openai_usage,
)

from orchestrator import ReplyAtLimit, ToolResult, Usage
from orchestrator.agent import run_turn
from orchestrator.agent.recovery import GO_ON
from orchestrator.models.anthropic import AnthropicEndpoint, AnthropicModel
from orchestrator.models.http import RetryPolicy
from orchestrator.models.openai import OpenAIChatModel, OpenAIEndpoint
from orchestrator.models.openai_responses import OpenAIResponsesModel, ResponsesEndpoint
from orchestrator.tools import Workspace
from tests.conftest import MakeDeps, final_text
from tests.loop.test_reply_at_limit import notices, replied

WHOLE = '{"path": "big.txt", "content": "one\\ntwo\\nthree\\n"}'
CUT = WHOLE[:30]
NO_RETRY = RetryPolicy(max_retries=0)


# --- chat completions: finish_reason "length" -----------------------------------------


def chat_model(server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps) -> Any:
    endpoint = OpenAIEndpoint(
        provider="openai-compatible", model="test-model", base_url=server.url + "/v1"
    )
    return OpenAIChatModel(endpoint, http_options(client, sleeps, NO_RETRY))


def chat_cut_text(text: str, tokens: int) -> list[bytes]:
    return openai_text(text, usage=(40, tokens), finish="length")


def chat_cut_call(arguments: str, tokens: int) -> list[bytes]:
    return openai_tool_call("call_1", "write_file", arguments, usage=(40, tokens), finish="length")


async def test_chat_completions_text_cut_by_length_is_continued_and_joined(
    server: LoopbackServer,
    client: httpx.AsyncClient,
    sleeps: Sleeps,
    make_deps: MakeDeps,
) -> None:
    server.add(
        Reply.sse(chat_cut_text("The answer is for", 16)),
        Reply.sse(openai_text("ty-two.", usage=(60, 4))),
    )
    state, deps, sink = make_deps(chat_model(server, client, sleeps), max_tokens=16)
    assert await final_text(state, deps) == "The answer is forty-two."
    [journaled] = replied(sink.events)
    assert journaled.text == "The answer is forty-two."
    assert journaled.usage == Usage(input_tokens=100, output_tokens=20)
    assert notices(sink.events) == [("continue", 1, None)]
    first, second = (r.json() for r in server.requests)
    assert second["max_tokens"] == first["max_tokens"] == 16
    # The same conversation, then the text so far as the model's, then the note.
    assert second["messages"] == [
        *first["messages"],
        {"role": "assistant", "content": "The answer is for"},
        {"role": "user", "content": GO_ON},
    ]


async def test_chat_completions_call_cut_by_length_is_asked_again_with_double_the_limit(
    server: LoopbackServer,
    client: httpx.AsyncClient,
    sleeps: Sleeps,
    make_deps: MakeDeps,
    workspace: Workspace,
) -> None:
    server.add(
        Reply.sse(chat_cut_call(CUT, 16)),
        Reply.sse(
            [
                openai_chunk({"role": "assistant", "content": None}),
                openai_chunk(
                    {
                        "tool_calls": [
                            openai_call_delta(0, id="c2", name="write_file", arguments=WHOLE)
                        ]
                    }
                ),
                openai_chunk({}, finish="tool_calls"),
                openai_usage(40, 25),
                OPENAI_DONE,
            ]
        ),
        Reply.sse(openai_text("Written.")),
    )
    state, deps, sink = make_deps(chat_model(server, client, sleeps), max_tokens=16)
    await run_turn(state, deps)
    bodies = [r.json() for r in server.requests]
    assert [b["max_tokens"] for b in bodies] == [16, 32, 16]
    assert bodies[1]["messages"] == bodies[0]["messages"]  # the same request, larger
    assert notices(sink.events) == [("larger", 1, 32)]
    assert (workspace.root / "big.txt").read_text() == "one\ntwo\nthree\n"
    assert replied(sink.events)[0].usage == Usage(input_tokens=80, output_tokens=41)


async def test_a_larger_limit_the_server_refuses_leaves_the_call_answered_as_too_long(
    server: LoopbackServer,
    client: httpx.AsyncClient,
    sleeps: Sleeps,
    make_deps: MakeDeps,
    workspace: Workspace,
) -> None:
    refusal = "max_tokens is too large: 32. This model supports at most 16 completion tokens."
    server.add(
        Reply.sse(chat_cut_call(CUT, 16)),
        Reply.json(400, {"error": {"message": refusal, "type": "invalid_request_error"}}),
        Reply.sse(openai_text("In parts, then.")),
    )
    state, deps, sink = make_deps(chat_model(server, client, sleeps), max_tokens=16)
    assert await final_text(state, deps) == "In parts, then."
    assert [r.json()["max_tokens"] for r in server.requests] == [16, 32, 16]
    assert notices(sink.events) == [("larger", 1, 32), ("too_long", 0, None)]
    [told] = [e.message for e in sink.events if isinstance(e, ReplyAtLimit) and e.recovery == 0]
    assert "a larger limit was refused" in told
    assert "This model supports at most 16" in told
    assert not (workspace.root / "big.txt").exists()
    tool = server.requests[2].json()["messages"][-1]
    assert tool["role"] == "tool"
    assert "too long to emit" in tool["content"]


# --- Anthropic: stop_reason "max_tokens" ----------------------------------------------


def anthropic_model(server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps) -> Any:
    endpoint = AnthropicEndpoint(model="claude-test", api_key="sk-ant-test", base_url=server.url)
    return AnthropicModel(endpoint, http_options(client, sleeps, NO_RETRY))


def anthropic_cut_call(arguments: str, output_tokens: int) -> list[bytes]:
    return anthropic_tool_use(
        "toolu_1",
        "write_file",
        arguments,
        input_tokens=30,
        output_tokens=output_tokens,
        stop="max_tokens",
    )


async def test_anthropic_call_cut_at_max_tokens_is_asked_again_with_a_larger_limit(
    server: LoopbackServer,
    client: httpx.AsyncClient,
    sleeps: Sleeps,
    make_deps: MakeDeps,
    workspace: Workspace,
) -> None:
    server.add(
        Reply.sse(anthropic_cut_call(CUT, 8192)),
        Reply.sse(anthropic_tool_use("toolu_2", "write_file", WHOLE, input_tokens=30)),
        Reply.sse(anthropic_text("Written.")),
    )
    # No limit set for the role: the adapter's default (8,192), which the cut reply's
    # output tokens show, doubled.
    state, deps, sink = make_deps(anthropic_model(server, client, sleeps))
    assert await final_text(state, deps) == "Written."
    bodies = [r.json() for r in server.requests]
    assert [b["max_tokens"] for b in bodies] == [8192, 16_384, 8192]
    assert bodies[1]["messages"] == bodies[0]["messages"]
    assert notices(sink.events) == [("larger", 1, 16_384)]
    assert (workspace.root / "big.txt").read_text() == "one\ntwo\nthree\n"
    # The tool ran once, from the whole call; the model saw that call, never the cut one.
    assert [m.status for m in state.messages if isinstance(m, ToolResult)] == ["ok"]
    [use] = [b for b in bodies[2]["messages"][-2]["content"] if b["type"] == "tool_use"]
    assert (use["id"], use["input"]) == (
        "toolu_2",
        {"path": "big.txt", "content": "one\ntwo\nthree\n"},
    )
    assert replied(sink.events)[0].usage == Usage(input_tokens=60, output_tokens=8202)


async def test_anthropic_text_cut_at_max_tokens_is_continued(
    server: LoopbackServer,
    client: httpx.AsyncClient,
    sleeps: Sleeps,
    make_deps: MakeDeps,
) -> None:
    cut = anthropic_text("Step one: read the", output_tokens=100)
    cut[-2] = message_delta("max_tokens", 100)
    server.add(Reply.sse(cut), Reply.sse(anthropic_text(" files.")))
    state, deps, sink = make_deps(anthropic_model(server, client, sleeps), max_tokens=100)
    assert await final_text(state, deps) == "Step one: read the files."
    partial, note = server.requests[1].json()["messages"][-2:]
    assert partial["role"] == "assistant"
    assert [(b["type"], b["text"]) for b in partial["content"]] == [("text", "Step one: read the")]
    assert note == {"role": "user", "content": [{"type": "text", "text": GO_ON}]}
    assert notices(sink.events) == [("continue", 1, None)]


# --- the Responses API: incomplete, max_output_tokens ---------------------------------


def responses_model(server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps) -> Any:
    endpoint = ResponsesEndpoint(model="gpt-test", base_url=server.url + "/v1", api_key="sk-test")
    return OpenAIResponsesModel(endpoint, http_options(client, sleeps, NO_RETRY))


def responses_cut_call(arguments: str, output_tokens: int) -> list[bytes]:
    """A response that ends `incomplete` in the middle of a call (its item never done)."""
    stream = Stream().created().cut_call("call_cut", "write_file", arguments)
    return stream.incomplete("max_output_tokens", usage(50, output_tokens)).events


async def test_responses_call_cut_twice_is_not_run_and_the_model_is_told(
    server: LoopbackServer,
    client: httpx.AsyncClient,
    sleeps: Sleeps,
    make_deps: MakeDeps,
    workspace: Workspace,
) -> None:
    server.add(
        Reply.sse(responses_cut_call(CUT, 64)),
        Reply.sse(responses_cut_call(CUT + "xyz", 128)),
        Reply.sse(Stream().created().text("I will write it in parts.").completed().events),
    )
    state, deps, sink = make_deps(responses_model(server, client, sleeps), max_tokens=64)
    assert await final_text(state, deps) == "I will write it in parts."
    bodies = [r.json() for r in server.requests]
    assert [b["max_output_tokens"] for b in bodies] == [64, 128, 64]
    assert notices(sink.events) == [("larger", 1, 128), ("too_long", 0, None)]
    assert not (workspace.root / "big.txt").exists()  # never handed to the tool
    # What the model is shown: its call, without the arguments that never came whole,
    # and a result that says it was too long, with advice; nothing about malformed JSON.
    call, output = bodies[2]["input"][-2:]
    assert (call["type"], call["name"], call["arguments"]) == ("function_call", "write_file", "{}")
    assert output["type"] == "function_call_output"
    assert output["call_id"] == call["call_id"]
    assert "too long to emit" in output["output"]
    assert "write a long file in parts" in output["output"]
    assert "JSON" not in output["output"]
    [journaled, _] = replied(sink.events)
    assert journaled.tool_calls[0].cut == len(CUT + "xyz")
    assert journaled.usage == Usage(input_tokens=100, output_tokens=192)
