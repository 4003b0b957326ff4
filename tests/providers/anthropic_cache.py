"""Anthropic's prompt cache, simulated as its documentation describes, behind a loopback
Messages server whose answers a function decides: for the prompt-caching benchmark
(tests/benchmarks/bench_cache.py) and the tests of its rules (test_anthropic_cache.py).

What is modelled (docs.anthropic.com, "Prompt caching"):

- The prompt is rendered tools, then system, then messages; every content block (a tool
  definition, a system text block, a block of a message) ends at a block boundary.
- A `cache_control` breakpoint (at most 4 a request) marks the prefix that ends with its
  block. For each breakpoint the cache is checked at its own boundary and at the
  boundaries up to `lookback` (about 20) blocks before it; the longest live entry found
  is read (`cache_read_input_tokens`).
- The prefix up to each breakpoint is then cached; the part of it not read is billed as a
  write (`cache_creation_input_tokens`, split by lifetime) and the rest of the prompt is
  `input_tokens`. A prefix shorter than the model's minimum (1,024 tokens for
  Sonnet-class models) is not cached, and no error says so.
- An entry lives 5 minutes, or 1 hour with `"ttl": "1h"`, and each hit restarts its
  lifetime. Breakpoints with a 1-hour lifetime must come before 5-minute ones.
- A prefix matches only if it is identical, model included; changing `tool_choice` or the
  thinking settings invalidates the cached messages, not the tools and system prompt.

Tokens are counted deterministically: each block is a quarter of the characters of its
canonical JSON (sorted keys, no `cache_control`), rounded up.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from provider_server import Recorded, Reply
from sdk_types import anthropic_event

MIN_TOKENS = 1024  # Sonnet-class models; more for some others
LOOKBACK = 20  # blocks before a breakpoint where a cached prefix is still found
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


@dataclass(frozen=True)
class CacheUsage:
    """How one request's input tokens were billed."""

    input_tokens: int  # plain input: after the last cached prefix
    cache_read: int
    cache_write_5m: int = 0
    cache_write_1h: int = 0

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    @property
    def total(self) -> int:
        return self.input_tokens + self.cache_read + self.cache_write


@dataclass
class _Entry:
    ttl: float
    expires: float


@dataclass(frozen=True)
class _Block:
    key: bytes  # what the prefix hash covers
    tokens: int
    ttl: str | None  # the lifetime of its breakpoint, None: no breakpoint here


def _canonical(value: object) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _blocks(body: Mapping[str, Any]) -> Iterator[_Block | bytes]:
    """The prompt's blocks in rendering order; bytes in between are mixed into the hash of
    what follows without being a block (what a change of invalidates from there on)."""
    yield _canonical({"model": body.get("model")})
    for tool in body.get("tools") or ():
        yield _block(tool, "tool")
    system = body.get("system") or []
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system:
        yield _block(block, "system")
    yield _canonical({"tool_choice": body.get("tool_choice"), "thinking": body.get("thinking")})
    for message in body.get("messages") or ():
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks:
            yield _block(block, message["role"])


def block_tokens(block: Mapping[str, Any]) -> int:
    """The tokens one block (a tool definition, a text block, ...) counts for."""
    return math.ceil(len(_unmarked(block)) / 4)


def _unmarked(block: Mapping[str, Any]) -> bytes:
    return _canonical({k: v for k, v in block.items() if k != "cache_control"})


def _block(block: Mapping[str, Any], where: str) -> _Block:
    control = block.get("cache_control")
    text = _unmarked(block)
    ttl = None if control is None else str(control.get("ttl", "5m"))
    if ttl is not None and ttl not in TTL_SECONDS:
        raise ValueError(f"cache_control.ttl must be 5m or 1h, not {ttl!r}")
    return _Block(where.encode() + b":" + text, math.ceil(len(text) / 4), ttl)


class PromptCache:
    """The provider's cache of prompt prefixes, shared by every request it is shown."""

    def __init__(
        self,
        *,
        min_tokens: int = MIN_TOKENS,
        lookback: int = LOOKBACK,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.min_tokens = min_tokens
        self.lookback = lookback
        self.clock = clock
        self._entries: dict[bytes, _Entry] = {}

    def account(self, body: Mapping[str, Any]) -> CacheUsage:
        """Look `body`'s prefixes up, cache them, and say how its input is billed. A
        request the API would refuse raises ValueError."""
        prompt = _Prompt(body)
        now = self.clock()
        read = max((self._lookup(prompt, end, now) for end, _ in prompt.points), default=0)
        writes = {"5m": 0, "1h": 0}
        cached = read
        for end, ttl in prompt.points:
            if prompt.tokens[end] < self.min_tokens:
                continue
            seconds = TTL_SECONDS[ttl]
            entry = self._entries.get(prompt.hashes[end - 1])
            if entry is not None and entry.expires > now:
                seconds = max(seconds, entry.ttl)
            self._entries[prompt.hashes[end - 1]] = _Entry(seconds, now + seconds)
            if end > cached:
                writes[ttl] += prompt.tokens[end] - prompt.tokens[cached]
                cached = end
        return CacheUsage(
            input_tokens=prompt.tokens[-1] - prompt.tokens[cached],
            cache_read=prompt.tokens[read],
            cache_write_5m=writes["5m"],
            cache_write_1h=writes["1h"],
        )

    def _lookup(self, prompt: _Prompt, end: int, now: float) -> int:
        """The longest live prefix at the breakpoint after block `end` or within the
        lookback before it, in blocks (0: none); a hit restarts the entry's lifetime."""
        for boundary in range(end, max(end - self.lookback, 1) - 1, -1):
            entry = self._entries.get(prompt.hashes[boundary - 1])
            if entry is not None and entry.expires > now:
                entry.expires = now + entry.ttl
                return boundary
        return 0


class _Prompt:
    """A request's prompt as blocks: the hash of each prefix, the tokens before each
    boundary and its breakpoints (blocks up to the breakpoint, lifetime)."""

    def __init__(self, body: Mapping[str, Any]) -> None:
        self.hashes: list[bytes] = []  # hashes[i]: the prefix of blocks 0..i
        self.tokens = [0]  # tokens[n]: tokens of the first n blocks
        self.points: list[tuple[int, str]] = []
        state = hashlib.sha256()
        for item in _blocks(body):
            if isinstance(item, bytes):
                state.update(item)
                continue
            state.update(item.key)
            self.hashes.append(state.copy().digest())
            self.tokens.append(self.tokens[-1] + item.tokens)
            if item.ttl is not None:
                self.points.append((len(self.hashes), item.ttl))
        if len(self.points) > 4:
            raise ValueError(f"at most 4 blocks may have cache_control, not {len(self.points)}")
        if any(a == "5m" and b == "1h" for (_, a), (_, b) in itertools.pairwise(self.points)):
            raise ValueError("a 1h cache_control must not come after a 5m one")


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: dict[str, Any]


Answer = Sequence[str | ToolUse]  # the reply's blocks: text, tool calls


@dataclass(frozen=True)
class Served:
    """One request the server answered, as the provider would bill it."""

    usage: CacheUsage
    output_tokens: int


class CachingMessagesServer:
    """A `LoopbackServer` handler: bills each Messages request through `cache` and
    streams the reply `decide` chooses for it, with `usage` in `message_start` and
    `message_delta` as the API sends them."""

    def __init__(
        self, decide: Callable[[dict[str, Any]], Answer], cache: PromptCache | None = None
    ) -> None:
        self.decide = decide
        self.cache = cache or PromptCache()
        self.served: list[Served] = []
        self._ids = itertools.count(1)

    def __call__(self, request: Recorded) -> Reply:
        body = request.json()
        try:
            usage = self.cache.account(body)
        except ValueError as exc:
            error = {"type": "invalid_request_error", "message": str(exc)}
            return Reply.json(400, {"type": "error", "error": error})
        blocks = [
            {"type": "text", "text": part}
            if isinstance(part, str)
            else {
                "type": "tool_use",
                "id": f"toolu_{next(self._ids):08d}",
                "name": part.name,
                "input": part.input,
            }
            for part in self.decide(body)
        ]
        output = math.ceil(len(_canonical(blocks)) / 4)
        self.served.append(Served(usage, output))
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return Reply.sse(_stream(body.get("model", ""), blocks, usage, output, stop), split=False)


def _stream(
    model: str, blocks: list[dict[str, Any]], usage: CacheUsage, output: int, stop: str
) -> list[bytes]:
    counts = {
        "input_tokens": usage.input_tokens,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation_input_tokens": usage.cache_write,
    }
    message: dict[str, Any] = {
        "id": "msg_cache",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            **counts,
            "output_tokens": 1,
            "cache_creation": {
                "ephemeral_5m_input_tokens": usage.cache_write_5m,
                "ephemeral_1h_input_tokens": usage.cache_write_1h,
            },
        },
    }
    events = [anthropic_event({"type": "message_start", "message": message})]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {
                "type": "input_json_delta",
                "partial_json": orjson.dumps(block["input"]).decode(),
            }
        events += [
            anthropic_event(
                {"type": "content_block_start", "index": index, "content_block": start}
            ),
            anthropic_event({"type": "content_block_delta", "index": index, "delta": delta}),
            anthropic_event({"type": "content_block_stop", "index": index}),
        ]
    end = {"stop_reason": stop, "stop_sequence": None}
    events.append(
        anthropic_event(
            {"type": "message_delta", "delta": end, "usage": {**counts, "output_tokens": output}}
        )
    )
    events.append(anthropic_event({"type": "message_stop"}))
    return events
