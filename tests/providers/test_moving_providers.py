"""A conversation that moves from one provider to another (a fallback chain answering the
same agent's context) stays valid on the wire: real adapters, one loopback server
speaking all three wire forms, and each request checked as that provider would check it
(`wire_rules`), beside the SDK-type check every request of the `server` fixture gets.

The context is grown as the turn loop grows it (the reply, then a result per call) and
each adapter is sent a view of it, so each adapter's wire cache takes in, as new, what
the others' replies added."""

from __future__ import annotations

import httpx
import msgspec
from adapter_setup import http_options
from provider_server import LoopbackServer, Reply, Sleeps
from responses_events import Stream, reasoning_item, usage
from sdk_types import (
    MESSAGE_STOP,
    OPENAI_DONE,
    block_delta,
    block_start,
    block_stop,
    message_delta,
    message_start,
    openai_call_delta,
    openai_chunk,
    openai_usage,
)
from wire_rules import anthropic_faults, chat_faults, responses_faults

from orchestrator import (
    AssistantMessage,
    Message,
    MessageView,
    ModelRequest,
    SystemMessage,
    Thinking,
    ToolResult,
    ToolSpec,
    UserMessage,
)
from orchestrator.models.anthropic import AnthropicEndpoint, AnthropicModel
from orchestrator.models.base import Model, collect
from orchestrator.models.call_ids import ANTHROPIC, OPENAI, wire_id
from orchestrator.models.http import HttpOptions, RetryPolicy
from orchestrator.models.openai import OpenAIChatModel, OpenAIEndpoint
from orchestrator.models.openai_responses import OpenAIResponsesModel, ResponsesEndpoint

TOOLS = (
    ToolSpec(
        name="read_file",
        description="Read a file",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    ),
)
READ = '{"path": "a.py"}'
VLLM_ID = "chatcmpl-tool-" + "5f" * 16  # vLLM's shape: 46 characters, over OpenAI's 40


def anthropic(
    server: LoopbackServer, opts: HttpOptions, model: str = "claude-test"
) -> AnthropicModel:
    endpoint = AnthropicEndpoint(
        model=model, api_key="sk-ant-test", base_url=server.url, thinking_budget=2048
    )
    return AnthropicModel(endpoint, opts)


def chat(server: LoopbackServer, opts: HttpOptions) -> OpenAIChatModel:
    endpoint = OpenAIEndpoint(
        provider="openai-compatible", model="qwen-test", base_url=server.url + "/v1"
    )
    return OpenAIChatModel(endpoint, opts)


def responses(
    server: LoopbackServer, opts: HttpOptions, model: str = "gpt-test"
) -> OpenAIResponsesModel:
    endpoint = ResponsesEndpoint(model=model, base_url=server.url + "/v1", api_key="sk-test")
    return OpenAIResponsesModel(endpoint, opts)


async def turn(model: Model, context: list[Message]) -> AssistantMessage:
    """One model call on the context, as the turn loop makes it: the reply, then a result
    per call, appended."""
    request = ModelRequest(messages=MessageView(context, len(context)), tools=TOOLS)
    async with model.stream(request) as events:
        reply = await collect(events)
    context.append(reply)
    for call in reply.tool_calls:
        context.append(ToolResult(call_id=call.id, name=call.name, content=f"read by {call.id}"))
    return reply


def resumed(context: list[Message]) -> list[Message]:
    """The context as a resume reads it back from the journal."""
    return msgspec.json.decode(msgspec.json.encode(context), type=list[Message])


# --- replies in each wire form ----------------------------------------------------------


def anthropic_reply(*, signature: str | None, text: str = "", calls: tuple[str, ...] = ()) -> Reply:
    """Thinking (when signed), text, then a tool_use block per call id."""
    events = [message_start()]
    index = 0
    if signature is not None:
        events += [
            block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            block_delta(0, {"type": "thinking_delta", "thinking": "Check a.py first."}),
            block_delta(0, {"type": "signature_delta", "signature": signature}),
            block_stop(0),
        ]
        index = 1
    if text:
        events += [
            block_start(index, {"type": "text", "text": ""}),
            block_delta(index, {"type": "text_delta", "text": text}),
            block_stop(index),
        ]
        index += 1
    for call_id in calls:
        use = {"type": "tool_use", "id": call_id, "name": "read_file", "input": {}}
        events += [
            block_start(index, use),
            block_delta(index, {"type": "input_json_delta", "partial_json": READ}),
            block_stop(index),
        ]
        index += 1
    events += [message_delta("tool_use" if calls else "end_turn", 30), MESSAGE_STOP]
    return Reply.sse(events)


def chat_reply(*, reasoning: str = "", text: str = "", calls: tuple[str, ...] = ()) -> Reply:
    """A chat completion with reasoning (as vLLM sends it), text and calls."""
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    if reasoning:
        chunks.append(openai_chunk({"reasoning_content": reasoning}))
    if text:
        chunks.append(openai_chunk({"content": text}))
    deltas = [
        openai_call_delta(i, id=call_id, name="read_file", arguments=READ)
        for i, call_id in enumerate(calls)
    ]
    if deltas:
        chunks.append(openai_chunk({"tool_calls": deltas}))
    chunks += [
        openai_chunk({}, finish="tool_calls" if calls else "stop"),
        openai_usage(100, 20),
        OPENAI_DONE,
    ]
    return Reply.sse(chunks)


# --- Anthropic <-> OpenAI-compatible ------------------------------------------------------


async def test_anthropic_then_a_chat_server_then_anthropic_again(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    opts = http_options(client, sleeps, RetryPolicy(max_retries=0))
    claude, qwen = anthropic(server, opts), chat(server, opts)
    server.add(
        # 1. Claude thinks, says something and calls a tool.
        anthropic_reply(signature="c2lnLTE=", text="Reading a.py.", calls=("toolu_01A",)),
        # 2. The chat server reasons, says only blank lines and calls twice, with ids
        #    Anthropic refuses: Kimi's `functions.NAME:N` and vLLM's 46 characters.
        chat_reply(
            reasoning="Both files now.", text="\n\n", calls=("functions.read_file:0", VLLM_ID)
        ),
        # 3. Again, numbering its calls afresh: the id of an earlier call comes back.
        chat_reply(calls=("functions.read_file:0",)),
        # 4. Claude, its thinking off while the chat server's tool round is the last.
        anthropic_reply(signature=None, text="a.py is fixed."),
        # 5. After the person's next message, a new round: thinking is back on.
        anthropic_reply(signature="c2lnLTI=", calls=("toolu_01B",)),
        # 6. And the chat server once more.
        chat_reply(text="All done."),
    )
    context: list[Message] = [
        SystemMessage(content="You are careful."),
        UserMessage(content="Fix a.py."),
    ]
    first = await turn(claude, context)
    assert first.thinking == (
        Thinking(text="Check a.py first.", signature="c2lnLTE=", source="anthropic:claude-test"),
    )
    second = await turn(qwen, context)
    assert second.thinking == (
        Thinking(text="Both files now.", source="openai-compatible:qwen-test"),
    )
    # A resume between two calls: what was journaled is what is sent.
    context = resumed(context)
    claude, qwen = anthropic(server, opts), chat(server, opts)
    await turn(qwen, context)
    await turn(claude, context)
    context.append(UserMessage(content="Now add a test."))
    await turn(claude, context)
    await turn(qwen, context)

    # Every request is one its provider takes.
    own = {"c2lnLTE=", "c2lnLTI="}  # the signatures Claude made
    for index, request in enumerate(server.requests):
        if request.path.endswith("/v1/messages"):
            assert anthropic_faults(request.json(), own) == [], index
        else:
            assert chat_faults(request.json()) == [], index

    # 2: the chat server gets no thinking, and Claude's tool_use id as it was.
    sent = server.requests[1].json()["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[2]["tool_calls"][0]["id"] == sent[3]["tool_call_id"] == "toolu_01A"

    # 4: Claude's own thinking goes back, the chat server's reasoning and blank text do
    # not; the ids it refuses are mapped, the repeated one made unique, each result sent
    # with its call's id; its thinking is off, as the last tool round was not its own.
    body = server.requests[3].json()
    assert body["system"][0]["text"] == "You are careful."
    turns = body["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant"] * 3 + ["user"]
    assert turns[1]["content"][0] == {
        "type": "thinking",
        "thinking": "Check a.py first.",
        "signature": "c2lnLTE=",
    }
    kimi = wire_id("functions.read_file:0", ANTHROPIC)
    again = wire_id("functions.read_file:0_2", ANTHROPIC)
    assert [b["type"] for b in turns[3]["content"]] == ["tool_use", "tool_use"]
    assert [b["id"] for b in turns[3]["content"]] == [kimi, VLLM_ID]
    assert [b["tool_use_id"] for b in turns[4]["content"]] == [kimi, VLLM_ID]
    assert [b["id"] for b in turns[5]["content"]] == [again]
    assert [b["tool_use_id"] for b in turns[6]["content"]] == [again]
    assert "thinking" not in body
    # 5: that round is over (Claude answered, the person spoke): thinking is on again.
    assert server.requests[4].json()["thinking"] == {"type": "enabled", "budget_tokens": 2048}

    # 6: the chat server gets every call, its own ids as it made them (but the one too
    # long for OpenAI, and the repeated one), and none of Claude's thinking.
    sent = server.requests[5].json()["messages"]
    calls = [c["id"] for m in sent for c in m.get("tool_calls", ())]
    results = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert (
        calls
        == results
        == [
            "toolu_01A",
            "functions.read_file:0",
            wire_id(VLLM_ID, OPENAI),
            "functions.read_file:0_2",
            "toolu_01B",
        ]
    )


# --- the Responses API -----------------------------------------------------------------


async def test_responses_then_anthropic_then_a_chat_server_then_responses_again(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    opts = http_options(client, sleeps, RetryPolicy(max_retries=0))
    gpt, claude, qwen = responses(server, opts), anthropic(server, opts), chat(server, opts)
    thought = reasoning_item(1, summary="Read a.py.")
    server.add(
        # 1. The Responses API reasons (encrypted) and calls.
        Reply.sse(
            Stream()
            .created()
            .reasoning(thought)
            .call("call_r1", "read_file", READ)
            .completed(usage(100, 20))
            .events
        ),
        # 2. Claude, in that tool round: its thinking is off.
        anthropic_reply(signature=None, calls=("toolu_02",)),
        # 3. A chat server with vLLM's long ids.
        chat_reply(calls=(VLLM_ID,)),
        # 4. The Responses API again, then 5. another of its models.
        Reply.sse(Stream().created().text("Done.").completed(usage(300, 5)).events),
        Reply.sse(Stream().created().text("Done too.").completed(usage(300, 5)).events),
    )
    context: list[Message] = [SystemMessage(content="Be brief."), UserMessage(content="Fix a.py.")]
    first = await turn(gpt, context)
    assert [b.source for b in first.thinking] == ["openai-responses:gpt-test"]
    await turn(claude, context)
    await turn(qwen, context)
    context = resumed(context)
    await turn(gpt, context)
    await turn(responses(server, opts, model="gpt-other"), context)

    kept = thought.model_dump(exclude_none=True)
    own = {kept["encrypted_content"]}
    anthropic_body, chat_body, again, other = (r.json() for r in server.requests[1:])
    # Claude gets no reasoning item (not as thinking, not as text), and no thinking
    # setting: the last tool round's reply does not start with Claude's thinking.
    assert anthropic_faults(anthropic_body) == []
    assert anthropic_body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "call_r1", "name": "read_file", "input": {"path": "a.py"}}
    ]
    assert "thinking" not in anthropic_body
    assert chat_faults(chat_body) == []
    # The model that made the reasoning item gets it back, unchanged, before its call;
    # another model of the same API does not (its encrypted content is not for it).
    assert responses_faults(again, own) == []
    assert again["input"][2] == kept
    assert again["input"][3]["call_id"] == "call_r1"
    assert responses_faults(other) == []
    assert [i for i in other["input"] if i.get("type") == "reasoning"] == []
    # Every call and result in both, the long id mapped as for chat completions.
    for body in (again, other):
        calls = [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]
        outputs = [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
        assert calls == outputs == ["call_r1", "toolu_02", wire_id(VLLM_ID, OPENAI)]


# --- another model of the same provider ---------------------------------------------------


async def test_another_anthropic_model_is_not_sent_the_first_ones_thinking(
    server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    # A signature is checked against the model that reads it: one Claude model's thinking
    # is not another's, even at the same provider.
    opts = http_options(client, sleeps, RetryPolicy(max_retries=0))
    server.add(
        anthropic_reply(signature="c2lnLW9wdXM=", text="Reading.", calls=("toolu_01",)),
        anthropic_reply(signature=None, text="Done."),
    )
    context: list[Message] = [UserMessage(content="Fix a.py.")]
    await turn(anthropic(server, opts, model="claude-big"), context)
    await turn(anthropic(server, opts, model="claude-small"), context)
    body = server.requests[1].json()
    assert anthropic_faults(body) == []
    assert body["messages"][1]["content"][0] == {"type": "text", "text": "Reading."}
    assert "thinking" not in body
