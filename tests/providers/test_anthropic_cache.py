"""The simulated Anthropic prompt cache the caching benchmark measures with: its rules,
and the Anthropic adapter against it over loopback."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from anthropic_cache import CacheUsage, CachingMessagesServer, PromptCache, ToolUse
from provider_server import LoopbackServer

from orchestrator import (
    AssistantMessage,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    UserMessage,
)
from orchestrator.models import ToolCallReady, UsageReported
from orchestrator.models.anthropic import AnthropicEndpoint, AnthropicModel, _Turns, to_wire
from orchestrator.models.base import WireCache
from orchestrator.models.http import HttpOptions

# 400 characters: 100 tokens a block (a quarter of its canonical JSON, rounded up).
TEXT = "x" * (400 - len('{"text":"","type":"text"}'))
OTHER = {"type": "text", "text": "y" * len(TEXT)}
EPHEMERAL = {"type": "ephemeral"}


def text(marked: bool | str = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": TEXT}
    if marked:
        block["cache_control"] = EPHEMERAL if marked is True else {**EPHEMERAL, "ttl": marked}
    return block


def body(system: list[dict[str, Any]], *turns: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": blocks}
        for i, blocks in enumerate(turns)
    ]
    return {"model": "claude-sonnet-4-5", "system": system, "messages": messages, **more}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_prefix_is_written_once_then_read_until_it_expires() -> None:
    clock = Clock()
    cache = PromptCache(clock=clock)
    request = body([text()] * 10 + [text(True)], [text()])
    assert cache.account(request) == CacheUsage(input_tokens=100, cache_read=0, cache_write_5m=1100)
    assert cache.account(request) == CacheUsage(input_tokens=100, cache_read=1100)
    # Each hit restarts the 5 minutes; 5 minutes without one and it is gone.
    clock.now = 299
    assert cache.account(request).cache_read == 1100
    clock.now = 598
    assert cache.account(request).cache_read == 1100
    clock.now = 898
    assert cache.account(request) == CacheUsage(input_tokens=100, cache_read=0, cache_write_5m=1100)
    # A 1-hour entry outlives that, and its write is billed as such.
    hour = body([OTHER] + [text()] * 10 + [text("1h")], [text()])
    assert cache.account(hour) == CacheUsage(input_tokens=100, cache_read=0, cache_write_1h=1200)
    clock.now += 3000
    assert cache.account(hour).cache_read == 1200


def test_nothing_below_the_minimum_is_cached() -> None:
    cache = PromptCache()
    short = body([text()] * 9 + [text(True)], [text()])  # 1,000 tokens at the breakpoint
    assert cache.account(short) == CacheUsage(input_tokens=1100, cache_read=0)
    assert cache.account(short) == CacheUsage(input_tokens=1100, cache_read=0)


def test_the_newest_breakpoint_reads_the_last_one_within_the_lookback() -> None:
    cache = PromptCache()
    system = [text()] * 11
    first = [text(True)]
    cache.account(body(system, first))
    # 20 blocks further on, the breakpoint still finds the prefix written before...
    later = body(system, [text()], [text()] * 19, [text(True)])
    assert cache.account(later) == CacheUsage(input_tokens=0, cache_read=1200, cache_write_5m=2000)
    # ...21 blocks further on, it does not: the whole prefix is written again.
    cache = PromptCache()
    cache.account(body(system, first))
    beyond = body(system, [text()], [text()] * 20, [text(True)])
    assert cache.account(beyond) == CacheUsage(input_tokens=0, cache_read=0, cache_write_5m=3300)
    # Unless a second breakpoint near the old one catches it.
    cache = PromptCache()
    cache.account(body(system, first))
    caught = body(system, [text()], [text(True)] + [text()] * 19, [text(True)])
    assert cache.account(caught).cache_read == 1200


def test_a_changed_block_misses_from_there_on() -> None:
    cache = PromptCache()
    shared = [text()] * 10 + [text(True)]
    cache.account(body(shared, [text(True)]))
    # Another first message: the shared prefix is still read.
    other = {**OTHER, "cache_control": EPHEMERAL}
    assert cache.account(body(shared, [other])) == CacheUsage(
        input_tokens=0, cache_read=1100, cache_write_5m=100
    )
    # tool_choice invalidates the cached messages, not the system prompt before them.
    changed = body(shared, [text(True)], tool_choice={"type": "any"})
    assert cache.account(changed).cache_read == 1100
    # Another model has a cache of its own.
    assert cache.account({**body(shared, [text(True)]), "model": "claude-opus-4-1"}).cache_read == 0


def test_requests_the_api_refuses() -> None:
    cache = PromptCache()
    with pytest.raises(ValueError, match="at most 4"):
        cache.account(body([text(True)] * 5, [text()]))
    with pytest.raises(ValueError, match="must not come after"):
        cache.account(body([text(True), text("1h")], [text()]))


SPEC = ToolSpec(
    name="read_file",
    description="Read a file. " + "It returns the file's text. " * 150,
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)


async def test_the_adapter_reads_what_its_previous_round_wrote(
    server: LoopbackServer, client: httpx.AsyncClient
) -> None:
    def decide(body: dict[str, Any]) -> list[str | ToolUse]:
        rounds = sum(m["role"] == "assistant" for m in body["messages"])
        return ["Reading.", ToolUse("read_file", {"path": "a.py"})] if rounds < 2 else ["Done."]

    handler = CachingMessagesServer(decide)
    server.handler = handler
    endpoint = AnthropicEndpoint(model="claude-sonnet-4-5", api_key="k", base_url=server.url)
    model = AnthropicModel(endpoint, HttpOptions(client=client))
    messages: list[Any] = [UserMessage(content="Read a.py.")]
    usages: list[Usage] = []
    for _ in range(3):
        request = ModelRequest(messages=tuple(messages), tools=(SPEC,), agent="a", step=len(usages))
        calls: list[ToolCall] = []
        async with model.stream(request) as stream:
            async for event in stream:
                if isinstance(event, UsageReported):
                    usages.append(event.usage)
                elif isinstance(event, ToolCallReady):
                    calls.append(event.call)
        messages.append(AssistantMessage(tool_calls=tuple(calls)))
        messages += [ToolResult(call_id=c.id, name=c.name, content="x = 1\n") for c in calls]
    # Round 1 writes the tools and its message; each later round reads all of that.
    assert [u.cache_read_tokens for u in usages] == [
        0,
        usages[0].cache_write_tokens,
        usages[0].cache_write_tokens + usages[1].cache_write_tokens,
    ]
    assert all(u.input_tokens == 0 and u.cache_write_tokens > 0 for u in usages)
    assert [s.usage.cache_read for s in handler.served] == [u.cache_read_tokens for u in usages]


def wide_round(calls: int) -> tuple[ModelRequest, ModelRequest]:
    """An agent's first request, and its second after a reply of `calls` tool calls."""
    start = (SystemMessage(content="Be careful. " * 400), UserMessage(content="Read them all."))
    reply = AssistantMessage(
        text="Reading.",
        tool_calls=tuple(
            ToolCall(id=f"c{i}", name="read_file", arguments=f'{{"path": "f{i}.py"}}')
            for i in range(calls)
        ),
    )
    results = tuple(
        ToolResult(call_id=f"c{i}", name="read_file", content="x = 1\n") for i in range(calls)
    )
    return ModelRequest(messages=start), ModelRequest(messages=(*start, reply, *results))


def marked(body: dict[str, Any]) -> list[str]:
    paths = [f"system[{i}]" for i, b in enumerate(body["system"]) if "cache_control" in b]
    for i, turn in enumerate(body["messages"]):
        paths += [
            f"messages[{i}][{j}]" for j, b in enumerate(turn["content"]) if "cache_control" in b
        ]
    return paths


@pytest.mark.parametrize("calls", [1, 5, 12, 30])
def test_after_a_wide_round_the_previous_requests_end_is_marked_and_read(calls: int) -> None:
    first, second = wide_round(calls)
    bodies = [to_wire(r, model="claude-sonnet-4-5", caching="auto") for r in (first, second)]
    newest = f"messages[2][{calls - 1}]"
    # A sentence, the calls and their results: past half the lookback, round 1's end is
    # marked as well (3 breakpoints of the 4 allowed); below it, the lookback finds it.
    expected = (
        ["system[0]", "messages[0][0]", newest] if 1 + 2 * calls > 10 else ["system[0]", newest]
    )
    assert marked(bodies[1]) == expected
    cache = PromptCache()
    written = cache.account(bodies[0])
    assert cache.account(bodies[1]).cache_read == written.cache_write
    # The markers are copies: the agent's wire form, kept for its next request, has none.
    kept: WireCache[Any] = WireCache(_Turns)
    to_wire(second, model="claude-sonnet-4-5", cache=kept, caching="auto")
    assert "cache_control" not in str(kept.state.turns)
