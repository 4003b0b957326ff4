"""Request translation against golden JSON files, and against the SDKs' request types.

To accept a deliberate change: `UPDATE_GOLDEN=1 pytest tests/providers`, then read the
diff of tests/providers/golden/ before committing it."""

from __future__ import annotations

import dataclasses
import itertools
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from sdk_types import check_anthropic_request, check_openai_request, check_responses_request

from orchestrator import (
    AssistantMessage,
    ModelRequest,
    SystemMessage,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
)
from orchestrator.models import anthropic, openai, openai_responses

GOLDEN = Path(__file__).parent / "golden"

TOOLS = (
    ToolSpec(
        name="read_file",
        description="Read a file in the workspace.",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    ),
    ToolSpec(
        name="shell",
        description="Run a shell command.",
        parameters={"type": "object", "properties": {"command": {"type": "string"}}},
    ),
)

CONVERSATION = (
    SystemMessage(content="You are the builder."),
    SystemMessage(content="Work in small steps."),
    UserMessage(content="Fix the failing test."),
    AssistantMessage(
        text="Let me look at both files.",
        thinking=(
            Thinking(text="The test imports util.", signature="c2lnbmF0dXJl"),
            Thinking(redacted="RU5DUllQVEVE"),
            Thinking(text="unsigned reasoning from another provider"),
            # A Responses API reasoning item: sent back there only.
            Thinking(
                text="Two files.",
                signature='{"id":"rs_1","summary":[{"text":"Two files.","type":"summary_text"}],'
                '"type":"reasoning","encrypted_content":"gAAAAB-opaque"}',
            ),
        ),
        tool_calls=(
            ToolCall(id="call_1", name="read_file", arguments='{"path": "test_util.py"}'),
            ToolCall(id="call_2", name="read_file", arguments='{"path": "util.py"'),
        ),
        stop_reason="tool_use",
    ),
    ToolResult(call_id="call_1", name="read_file", content="def test_add(): ..."),
    ToolResult(
        call_id="call_2",
        name="read_file",
        status="error",
        content="arguments of read_file are not valid JSON",
    ),
    UserMessage(content="Also check the README."),
    AssistantMessage(
        tool_calls=(ToolCall(id="call_3", name="shell", arguments='{"command": "make"}'),)
    ),
    ToolResult(call_id="call_3", name="shell", status="cancelled", content="stopped by the user"),
    SystemMessage(content="Note: the budget is half spent."),
    AssistantMessage(text="Done."),
    UserMessage(content="Thanks."),
)

FULL = ModelRequest(
    messages=CONVERSATION,
    tools=TOOLS,
    tool_choice="required",
    max_tokens=1000,
    temperature=0.3,
    stop=("</done>",),
)
MINIMAL = ModelRequest(messages=(UserMessage(content="Hello"),))
NAMED_TOOL = ModelRequest(
    messages=(UserMessage(content="Read it"),), tools=TOOLS, tool_choice="shell"
)

CASES: dict[str, tuple[dict[str, Any], str]] = {
    "openai_full": (
        openai.to_wire(FULL, model="gpt-4.1", max_tokens_field="max_completion_tokens"),
        "openai",
    ),
    "openai_minimal": (
        openai.to_wire(MINIMAL, model="llama3.1:8b", default_max_tokens=512),
        "openai",
    ),
    "openai_named_tool": (openai.to_wire(NAMED_TOOL, model="gpt-4.1"), "openai"),
    "anthropic_full": (anthropic.to_wire(FULL, model="claude-sonnet-4-5"), "anthropic"),
    "anthropic_thinking": (
        anthropic.to_wire(FULL, model="claude-sonnet-4-5", thinking_budget=4096),
        "anthropic",
    ),
    "anthropic_minimal": (anthropic.to_wire(MINIMAL, model="claude-haiku-4-5"), "anthropic"),
    "anthropic_cached": (
        anthropic.to_wire(FULL, model="claude-sonnet-4-5", caching="auto", cache_ttl="1h"),
        "anthropic",
    ),
    "anthropic_cached_no_system": (
        anthropic.to_wire(NAMED_TOOL, model="claude-haiku-4-5", caching="auto"),
        "anthropic",
    ),
    "openai_cache_key": (
        openai.to_wire(
            dataclasses.replace(MINIMAL, cache_key="orch-0123456789abcdef01234567"),
            model="gpt-4.1",
            prompt_cache_key=True,
        ),
        "openai",
    ),
    "anthropic_named_tool": (anthropic.to_wire(NAMED_TOOL, model="claude-haiku-4-5"), "anthropic"),
    "responses_full": (
        openai_responses.to_wire(
            dataclasses.replace(FULL, cache_key="orch-0123456789abcdef01234567"), model="gpt-5"
        ),
        "responses",
    ),
    "responses_minimal": (
        openai_responses.to_wire(MINIMAL, model="gpt-4.1", encrypted_reasoning=False),
        "responses",
    ),
    "responses_named_tool": (openai_responses.to_wire(NAMED_TOOL, model="gpt-5"), "responses"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_request_matches_golden(name: str) -> None:
    body, _ = CASES[name]
    path = GOLDEN / f"{name}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_bytes(orjson.dumps(body, option=orjson.OPT_INDENT_2) + b"\n")
    assert body == orjson.loads(path.read_bytes())


@pytest.mark.parametrize("name", sorted(CASES))
def test_request_is_valid_for_the_official_sdk(name: str) -> None:
    body, kind = CASES[name]
    if kind == "openai":
        check_openai_request(body)
    elif kind == "responses":
        check_responses_request(body)
    else:
        check_anthropic_request(body)


@pytest.mark.parametrize("adapter", ["openai", "responses", "anthropic"])
def test_a_growing_context_is_translated_once_and_sent_the_same(adapter: str) -> None:
    # The conversation grows a message at a time, as a live agent's does; each request,
    # made from a view of it with the agent's cache, must equal a translation from scratch.
    from orchestrator import MessageView
    from orchestrator.models.base import WireCache

    make = {
        "openai": openai.to_wire,
        "responses": openai_responses.to_wire,
        "anthropic": anthropic.to_wire,
    }[adapter]
    fresh = {
        "openai": openai.Messages,
        "responses": openai_responses.Items,
        "anthropic": anthropic._Turns,
    }[adapter]
    cache: WireCache[Any] = WireCache(fresh)
    context: list[Any] = []
    bodies = []
    for message in CONVERSATION:
        context.append(message)
        view = MessageView(context, len(context))
        request = ModelRequest(messages=view, tools=TOOLS)
        body = make(request, model="m", cache=cache)  # type: ignore[operator]
        plain = ModelRequest(messages=tuple(context), tools=TOOLS)
        assert body == make(plain, model="m")  # type: ignore[operator]
        bodies.append(body)
    # Translated once: the wire form of the first message is the very same object later.
    key = "input" if adapter == "responses" else "messages"
    first, last = bodies[2][key][0], bodies[-1][key][0]
    if adapter != "anthropic":
        assert first is last
    else:  # turns are copied as they may still grow; their blocks are not
        assert first["content"][0] is last["content"][0]
    # A request built from something else (a copy, not a view) starts the cache afresh.
    copy = ModelRequest(messages=tuple(context[:3]), tools=TOOLS)
    assert make(copy, model="m", cache=cache) == make(copy, model="m")  # type: ignore[operator]


def strip_markers(value: Any) -> Any:
    """A body without its prompt-caching markers, which move by design."""
    if isinstance(value, dict):
        return {k: strip_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_markers(v) for v in value]
    return value


def assert_prefix_stable(bodies: list[dict[str, Any]]) -> None:
    """Every request starts with the one before it: the same tools and system prompt, and
    its messages (turns) a prefix of the next one's, each rendered identically."""
    for before, after in itertools.pairwise(map(strip_markers, bodies)):
        assert before.get("tools") == after.get("tools")
        assert before.get("system") == after.get("system")
        assert after["messages"][: len(before["messages"])] == before["messages"]


async def test_requests_of_a_scripted_session_keep_a_prefix_that_never_moves(
    tmp_path: Path,
) -> None:
    # A real turn loop (scripted model, real tools) sends its requests; each adapter
    # renders them as it would live (one wire cache per agent), caching markers on.
    from orchestrator import AgentStarted, MemorySession, ScriptedModel
    from orchestrator.agent import TurnDeps, run_turn
    from orchestrator.models.base import WireCache
    from orchestrator.models.scripted import parse_script
    from orchestrator.tools import ToolContext, Workspace, workspace_tools

    calls = [
        [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}],
        [{"name": "read_file", "arguments": {"path": "a.txt"}}, {"name": "list_files"}],
        [{"name": "grep", "arguments": {"pattern": "x"}}],
    ]
    replies = [{"text": f"step {i}", "tool_calls": c} for i, c in enumerate(calls)]
    model = ScriptedModel(parse_script({"agents": {"main": [*replies, {"text": "done"}]}}))
    session = MemorySession()
    start = (SystemMessage(content="You are careful."), UserMessage(content="Do it."))
    await session.emit(AgentStarted(agent="main", role="main", messages=start))
    deps = TurnDeps(
        model=model,
        tools=workspace_tools(),
        context=ToolContext(workspace=Workspace(tmp_path), session="S"),
        events=session,
    )
    await run_turn(session.state.agents["main"], deps)
    assert len(model.requests) == 4
    anthropic_cache: WireCache[Any] = WireCache(anthropic._Turns)
    openai_cache: WireCache[Any] = WireCache(openai.Messages)
    assert_prefix_stable(
        [
            anthropic.to_wire(r, model="m", cache=anthropic_cache, caching="auto")
            for r in model.requests
        ]
    )
    assert_prefix_stable(
        [
            openai.to_wire(r, model="m", cache=openai_cache, prompt_cache_key=True)
            for r in model.requests
        ]
    )
    # One stable key for the session and role, and nothing else in it.
    keys = {r.cache_key for r in model.requests}
    assert len(keys) == 1
    assert keys.pop().startswith("orch-")


def test_anthropic_breakpoints_sit_at_the_shared_prefix_and_the_newest_message() -> None:
    body = anthropic.to_wire(FULL, model="m", caching="auto")
    marked = [path for path in _marker_paths(body)]
    assert marked == ["system[0]", f"messages[{len(body['messages']) - 1}].content[-1]"]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert len(marked) <= 4
    off = anthropic.to_wire(FULL, model="m", caching="off")
    assert list(_marker_paths(off)) == []


def _marker_paths(body: dict[str, Any]) -> list[str]:
    paths = []
    if isinstance(body.get("system"), list):
        paths += [f"system[{i}]" for i, b in enumerate(body["system"]) if "cache_control" in b]
    paths += [f"tools[{i}]" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    for i, turn in enumerate(body["messages"]):
        if "cache_control" in turn["content"][-1]:
            paths.append(f"messages[{i}].content[-1]")
    return paths


@pytest.mark.parametrize("adapter", ["openai", "anthropic"])
def test_a_note_follows_the_context_for_one_request_and_leaves_the_cache_as_it_was(
    adapter: str,
) -> None:
    from orchestrator import MessageView
    from orchestrator.models.base import WireCache

    make = openai.to_wire if adapter == "openai" else anthropic.to_wire
    fresh = openai.Messages if adapter == "openai" else anthropic._Turns
    cache: WireCache[Any] = WireCache(fresh)
    context = list(CONVERSATION)
    view = MessageView(context, len(context))
    noted = make(  # type: ignore[operator]
        ModelRequest(messages=view, tools=TOOLS, note="[running] t3"), model="m", cache=cache
    )
    plain = make(ModelRequest(messages=view, tools=TOOLS), model="m", cache=cache)  # type: ignore[operator]
    # The note is the request's last words, and only that request's.
    last = noted["messages"][-1]
    if adapter == "openai":
        assert last == {"role": "user", "content": "[running] t3"}
        assert noted["messages"][:-1] == plain["messages"]
    else:  # a text block of the last user turn: turns alternate
        assert last["role"] == "user"
        assert last["content"][-1] == {"type": "text", "text": "[running] t3"}
        assert last["content"][:-1] == plain["messages"][-1]["content"]
    assert plain == make(ModelRequest(messages=tuple(context), tools=TOOLS), model="m")  # type: ignore[operator]
    check = check_openai_request if adapter == "openai" else check_anthropic_request
    check(noted)
