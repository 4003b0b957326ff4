"""Anthropic Messages, streamed.

`to_wire` and `MessagesStreamDecoder` are pure; `AnthropicModel.stream` is the one HTTP
call. Thinking blocks come back with a signature and are replayed verbatim to the model
that made them, as the API requires when tools are used with extended thinking.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never, final

import orjson

from orchestrator.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    Thinking,
    ToolCall,
    ToolResult,
    UserMessage,
)
from orchestrator.models.anthropic_stream import MessagesStreamDecoder
from orchestrator.models.base import (
    AgentWireCaches,
    ModelEvent,
    ModelRequest,
    WireCache,
)
from orchestrator.models.call_ids import ANTHROPIC, CallIds
from orchestrator.models.http import HttpOptions, WireCall
from orchestrator.models.http import model_stream as _model_stream

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192

_RESULT_PREFIX = {
    "ok": "",
    "error": "",
    "cancelled": "Cancelled: ",
    "interrupted": "Interrupted: ",
    "unapproved": "",
}


EXTENDED_TTL_BETA = "extended-cache-ttl-2025-04-11"  # a 1-hour cache lifetime, where needed


@dataclass(frozen=True)
class AnthropicEndpoint:
    """Where and how to reach the Messages API. The key is kept out of repr."""

    model: str
    api_key: str | None = field(default=None, repr=False)
    base_url: str = DEFAULT_BASE_URL
    headers: Mapping[str, str] = field(default_factory=dict)
    max_tokens: int = DEFAULT_MAX_TOKENS
    thinking_budget: int | None = None
    provider: str = "anthropic"
    cache: Literal["off", "auto"] = "auto"  # prompt-caching breakpoints (see to_wire)
    cache_ttl: Literal["5m", "1h"] = "5m"  # lifetime of the shared prefix's cache entry

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/v1/messages"

    def wire_headers(self) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": API_VERSION,
        }
        if self.cache == "auto" and self.cache_ttl == "1h":
            headers["anthropic-beta"] = EXTENDED_TTL_BETA
        headers.update(self.headers)
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers


# --- request --------------------------------------------------------------------------


def to_wire(
    request: ModelRequest,
    *,
    model: str,
    provider: str = "anthropic",
    default_max_tokens: int = DEFAULT_MAX_TOKENS,
    thinking_budget: int | None = None,
    cache: WireCache[_Turns] | None = None,
    caching: Literal["off", "auto"] = "off",
    cache_ttl: Literal["5m", "1h"] = "5m",
) -> dict[str, Any]:
    """The JSON body of a streamed Messages call for `request`. With the `cache` of the
    asking agent, only messages added since its last request are translated.

    `caching="auto"` sets prompt-caching breakpoints (at most 3 of the 4 allowed): one at
    the end of the tools and system prompt, the prefix every round and every agent of a
    role shares (lifetime `cache_ttl`), and one on the newest message, moving forward
    every round (5 minutes), so each request reads what the previous one wrote. The
    provider finds that only within about 20 blocks before a breakpoint, so after a wide
    round (many tool calls at once) the previous request's end is marked too.

    Thinking goes back only to the model that made it (`provider:model`), and extended
    thinking is left off a request whose last tool round was not this model's (see
    `_thinks_in`)."""
    built, new = (cache or WireCache(_Turns)).feed(request.messages)
    source = f"{provider}:{model}"
    for message in new:
        built.add(message, source)
    system, turns = built.wire()
    max_tokens = request.max_tokens or default_max_tokens
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": turns}
    shared = {"type": "ephemeral"} if cache_ttl == "5m" else {"type": "ephemeral", "ttl": "1h"}
    if system:
        if caching == "auto":
            body["system"] = [{"type": "text", "text": system, "cache_control": shared}]
        else:
            body["system"] = system
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
        if caching == "auto" and not system:
            body["tools"][-1]["cache_control"] = shared
        body["tool_choice"] = _tool_choice(request.tool_choice)
    if caching == "auto" and turns:
        _mark_moving(turns)
    if request.note:  # after the breakpoints: this request's only, not a cached prefix
        _add_note(turns, request.note)
    if thinking_budget and _thinks_in(turns):
        # max_tokens counts thinking too and must exceed the budget.
        if max_tokens <= thinking_budget:
            body["max_tokens"] = thinking_budget + max_tokens
        body["thinking"] = {"type": "enabled", "budget_tokens": thinking_budget}
    # No temperature: the Messages API (per the official SDK's MessageCreateParams) has
    # none, so `request.temperature` is not sent.
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    body["stream"] = True
    return body


_CACHEABLE = frozenset({"text", "tool_result", "tool_use", "image", "document"})
# How many blocks before a breakpoint the provider looks for a cached prefix: "about 20"
# in its documentation, so rounds are held to half of it.
_LOOKBACK = 20


def _mark_moving(turns: list[dict[str, Any]]) -> None:
    """Breakpoints on the newest block and, if more than half the lookback lies between
    them, on the previous request's end: the last block before the newest assistant turn
    (the turn loop's previous request ended there, and wrote its prefix to the cache)."""
    newest = len(turns) - 1
    previous = next((i - 1 for i in range(newest, 0, -1) if turns[i]["role"] == "assistant"), -1)
    if previous >= 0 and sum(len(t["content"]) for t in turns[previous + 1 :]) > _LOOKBACK // 2:
        _mark(turns, previous)
    _mark(turns, newest)


def _add_note(turns: list[dict[str, Any]], note: str) -> None:
    """The request's note as a text block of its last user turn (or a user turn of its
    own after an assistant one): turns alternate."""
    if turns and turns[-1]["role"] == "user":
        turns[-1] = {**turns[-1], "content": [*turns[-1]["content"], *_text(note)]}
    else:
        turns.append({"role": "user", "content": _text(note)})


def _mark(turns: list[dict[str, Any]], index: int) -> None:
    content = turns[index]["content"]
    if content and content[-1].get("type") in _CACHEABLE:
        # Copies: the turn and the block are the agent's cached wire form, sent again later.
        marked = {**content[-1], "cache_control": {"type": "ephemeral"}}
        turns[index] = {**turns[index], "content": [*content[:-1], marked]}


_THINKING = frozenset({"thinking", "redacted_thinking"})


def _thinks_in(turns: list[dict[str, Any]]) -> bool:
    """Whether a request with these turns may enable extended thinking. The API requires
    the last assistant turn, if it called tools, to start with its thinking: one made by
    another provider or model (whose thinking is not sent here) cannot, so thinking is
    left off until a user turn ends that tool loop, as the API advises (it keeps one
    thinking setting per assistant turn)."""
    last: list[dict[str, Any]] = next(
        (t["content"] for t in reversed(turns) if t["role"] == "assistant"), []
    )
    if not any(block["type"] == "tool_use" for block in last):
        return True
    return last[0]["type"] in _THINKING


class _Turns:
    """Messages as Anthropic turns, built one message at a time: leading system messages
    become `system`; the rest become alternating turns, with consecutive same-role
    messages merged and tool results first in their user turn. Call ids go through
    `CallIds`, so that ids made by other providers are ones the API takes."""

    def __init__(self) -> None:
        self.system: list[str] = []
        self.turns: list[dict[str, Any]] = []
        self._results = 0  # tool_result blocks at the start of the last turn
        self._ids = CallIds(ANTHROPIC)

    def add(self, message: Message, source: str) -> None:
        match message:
            case SystemMessage(content=content):
                if self.turns:
                    self._add("user", _text(content))
                elif content.strip():
                    self.system.append(content)
            case UserMessage(content=content):
                self._add("user", _text(content))
            case AssistantMessage():
                self._add("assistant", self._assistant_blocks(message, source))
            case ToolResult(call_id=call_id):
                block = _tool_result(message, self._ids.result(call_id))
                self._add("user", [block], result=True)
            case _:
                assert_never(message)

    def _assistant_blocks(self, message: AssistantMessage, source: str) -> list[dict[str, Any]]:
        blocks = [_thinking(block) for block in message.thinking if _replayable(block, source)]
        blocks += _text(message.text)
        for call in message.tool_calls:
            wire = {"type": "tool_use", "id": self._ids.call(call.id), "name": call.name}
            blocks.append({**wire, "input": _input(call)})
        return blocks

    def _add(self, role: str, blocks: list[dict[str, Any]], *, result: bool = False) -> None:
        if not blocks:
            return  # the API refuses empty turns
        if not self.turns or self.turns[-1]["role"] != role:
            self.turns.append({"role": role, "content": []})
            self._results = 0
        content = self.turns[-1]["content"]
        if result:
            content[self._results : self._results] = blocks
            self._results += len(blocks)
        else:
            content.extend(blocks)

    def wire(self) -> tuple[str, list[dict[str, Any]]]:
        """The system text and the turns, as a request may take them: the last turn is
        copied, since later messages may still join it."""
        turns = self.turns[:]
        if turns:
            turns[-1] = {**turns[-1], "content": turns[-1]["content"][:]}
        return "\n\n".join(self.system), turns


def _text(text: str) -> list[dict[str, Any]]:
    # The API refuses a text block of only whitespace (chat models often say "\n\n"
    # before their calls).
    return [{"type": "text", "text": text}] if text.strip() else []


def _replayable(block: Thinking, source: str) -> bool:
    """Whether `block` can be sent to the model named `source`: only its own, signed (or
    redacted) thinking. A block recorded before thinking named its model is taken for
    Anthropic's if it is redacted or has a signature that is not a JSON object (which
    holds a Responses API reasoning item)."""
    if block.redacted is None and not block.signature:
        return False  # a chat server's plain reasoning, or a block cut before its signature
    if block.source is not None:
        return block.source == source
    return block.redacted is not None or not str(block.signature).startswith("{")


def _thinking(block: Thinking) -> dict[str, Any]:
    if block.redacted is not None:
        return {"type": "redacted_thinking", "data": block.redacted}
    return {"type": "thinking", "thinking": block.text, "signature": block.signature}


def _input(call: ToolCall) -> dict[str, Any]:
    # A malformed call still has to be replayed as an object; its error result tells
    # the model what went wrong.
    try:
        value = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _tool_result(result: ToolResult, call_id: str) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    content = _RESULT_PREFIX[result.status] + result.content
    if content.strip():
        block["content"] = content
    if result.status != "ok":
        block["is_error"] = True
    return block


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice == "required":
        return {"type": "any"}
    if choice in ("auto", "none"):
        return {"type": choice}
    return {"type": "tool", "name": choice}


# --- response stream ------------------------------------------------------------------


@final
class AnthropicModel:
    """A `Model` over the Anthropic Messages API."""

    def __init__(self, endpoint: AnthropicEndpoint, http: HttpOptions | None = None) -> None:
        self._endpoint = endpoint
        self._http = http or HttpOptions()
        self._wire: AgentWireCaches[_Turns] = AgentWireCaches(_Turns)

    @property
    def name(self) -> str:
        return f"{self._endpoint.provider}:{self._endpoint.model}"

    @property
    def endpoint(self) -> AnthropicEndpoint:
        return self._endpoint

    def __repr__(self) -> str:
        return f"AnthropicModel({self.name!r}, base_url={self._endpoint.base_url!r})"

    def stream(
        self, request: ModelRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[ModelEvent]]:
        ep = self._endpoint
        body = to_wire(
            request,
            model=ep.model,
            provider=ep.provider,
            default_max_tokens=ep.max_tokens,
            thinking_budget=ep.thinking_budget,
            cache=self._wire[request.agent],
            caching=ep.cache,
            cache_ttl=ep.cache_ttl,
        )
        call = WireCall(url=ep.url, headers=ep.wire_headers(), body=body)
        return _model_stream(
            self._http,
            call,
            lambda: MessagesStreamDecoder(ep.provider, source=self.name),
            provider=ep.provider,
        )
