"""OpenAI-compatible chat completions, streamed: one adapter for OpenAI, Ollama, vLLM,
llama.cpp server, LM Studio and OpenRouter, told apart only by base URL and key.

`to_wire` and `ChatStreamDecoder` are pure; `OpenAIChatModel.stream` is the one HTTP call.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never, final

import msgspec
import orjson

from orchestrator.errors import ModelError, ProviderFatal, ProviderTransient
from orchestrator.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from orchestrator.models.base import (
    MAX_TOKENS,
    AgentWireCaches,
    ModelEvent,
    ModelRequest,
    StreamEnded,
    TextDelta,
    ThinkingDelta,
    ThinkingDone,
    ToolCallReady,
    UsageReported,
    WireCache,
)
from orchestrator.models.call_ids import OPENAI, CallIds
from orchestrator.models.failures import classify, error_fields
from orchestrator.models.http import HttpOptions, WireCall, bearer_headers, json_data
from orchestrator.models.http import model_stream as _model_stream
from orchestrator.models.sse import ServerSentEvent

MaxTokensField = Literal["max_tokens", "max_completion_tokens"]

# Finish reasons in the vocabulary the rest of the code uses (Anthropic's, as the
# scripted model does); unknown ones pass through unchanged.
STOP_REASONS = {
    "stop": "end_turn",
    "length": MAX_TOKENS,
    "tool_calls": "tool_use",
    "function_call": "tool_use",
}

_RESULT_PREFIX = {
    "ok": "",
    "error": "Error: ",
    "cancelled": "Cancelled: ",
    "interrupted": "Interrupted: ",
    "unapproved": "Error: ",
}


@dataclass(frozen=True)
class OpenAIEndpoint:
    """Where and how to reach one OpenAI-compatible server. The key is kept out of repr."""

    provider: str
    model: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict)
    max_tokens_field: MaxTokensField = "max_tokens"
    max_tokens: int | None = None
    temperature: float | None = None  # when the request gives none (a role's own)
    prompt_cache_key: bool = False  # send the request's cache key (on for OpenAI itself)

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def wire_headers(self) -> dict[str, str]:
        return bearer_headers(self.headers, self.api_key)


# --- request --------------------------------------------------------------------------


def to_wire(
    request: ModelRequest,
    *,
    model: str,
    max_tokens_field: MaxTokensField = "max_tokens",
    default_max_tokens: int | None = None,
    default_temperature: float | None = None,
    cache: WireCache[Messages] | None = None,
    prompt_cache_key: bool = False,
) -> dict[str, Any]:
    """The JSON body of a streamed chat completion for `request`. With the `cache` of
    the asking agent, only messages added since its last request are translated."""
    wire, new = (cache or WireCache(Messages)).feed(request.messages)
    for message in new:
        wire.add(message)
    body: dict[str, Any] = {
        "model": model,
        "messages": wire.messages[:],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.note:  # this request's only: after the cached wire form, never in it
        body["messages"].append({"role": "user", "content": request.note})
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
        body["tool_choice"] = _tool_choice(request.tool_choice)
    max_tokens = request.max_tokens or default_max_tokens
    if max_tokens is not None:
        body[max_tokens_field] = max_tokens
    temperature = request.temperature if request.temperature is not None else default_temperature
    if temperature is not None:
        body["temperature"] = temperature
    if request.stop:
        body["stop"] = list(request.stop)
    if prompt_cache_key and request.cache_key:
        # Agents of one role in one session share their prefix, so they share a key.
        body["prompt_cache_key"] = request.cache_key
    return body


class Messages:
    """A context as chat messages, built one message at a time; call ids go through
    `CallIds`, so that ids made by other providers are ones OpenAI takes."""

    __slots__ = ("_ids", "messages")

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._ids = CallIds(OPENAI)

    def add(self, message: Message) -> None:
        self.messages.append(self._message(message))

    def _message(self, message: Message) -> dict[str, Any]:
        match message:
            case SystemMessage(content=content):
                return {"role": "system", "content": content}
            case UserMessage(content=content):
                return {"role": "user", "content": content}
            case AssistantMessage(text=text, tool_calls=calls):
                # Reasoning is not sent back: OpenAI-compatible servers do not take it.
                wire: dict[str, Any] = {"role": "assistant", "content": text or None}
                if calls:
                    wire["tool_calls"] = [
                        {
                            "id": self._ids.call(c.id),
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in calls
                    ]
                elif not text:
                    wire["content"] = ""
                return wire
            case ToolResult(call_id=call_id, status=status, content=content):
                prefix = _RESULT_PREFIX[status]
                sent = self._ids.result(call_id)
                return {"role": "tool", "tool_call_id": sent, "content": prefix + content}
            case _:
                assert_never(message)


def _tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


# --- response stream ------------------------------------------------------------------


class _PartialCall(msgspec.Struct):
    id: str
    name: str = ""
    arguments: list[str] = msgspec.field(default_factory=list)

    def ready(self) -> ToolCallReady:
        args = "".join(self.arguments)
        return ToolCallReady(call=ToolCall(id=self.id, name=self.name, arguments=args or "{}"))


@final
class ChatStreamDecoder:
    """Chat completion chunks to model events. Tool-call argument deltas are assembled
    per `index` (calls may interleave) and emitted, raw, when the choice finishes; usage
    comes from the final chunk (whose `choices` is empty) and is emitted at the end.
    Reasoning is marked as `source`'s (`Model.name`)."""

    def __init__(self, provider: str, *, source: str | None = None) -> None:
        self._provider = provider
        self._source = source
        self._calls: list[_PartialCall] = []
        self._by_index: dict[int, _PartialCall] = {}
        self._thinking: list[str] = []
        self._usage: Usage | None = None
        self._finish: str | None = None
        self._flushed = False
        self._done = False
        self._refused = False

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, event: ServerSentEvent) -> list[ModelEvent]:
        if event.data.strip() == "[DONE]":
            self._done = True
            return []
        chunk = json_data(event, self._provider)
        if not isinstance(chunk, dict):
            raise ProviderFatal(f"unexpected chunk: {event.data[:200]!r}", provider=self._provider)
        if chunk.get("error"):
            raise self._error(chunk)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = usage_from_wire(usage)
        out: list[ModelEvent] = []
        for choice in chunk.get("choices") or ():
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                out += self._choice(choice)
        return out

    def finish(self) -> list[ModelEvent]:
        if self._finish is None and not self._done:
            raise ProviderTransient(
                "the stream ended before the model finished", provider=self._provider
            )
        out = self._flush()
        if self._usage is not None:
            out.append(UsageReported(usage=self._usage))
        reason = STOP_REASONS.get(self._finish or "", self._finish)
        if reason == "end_turn" and self._calls:
            reason = "tool_use"
        elif reason == "end_turn" and self._refused:
            reason = "refusal"
        out.append(StreamEnded(stop_reason=reason))
        return out

    def _choice(self, choice: dict[str, Any]) -> list[ModelEvent]:
        out: list[ModelEvent] = []
        delta = choice.get("delta") or {}
        # vLLM and DeepSeek say `reasoning_content`; Ollama and OpenRouter say `reasoning`.
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._thinking.append(reasoning)
            out.append(ThinkingDelta(text=reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            out.append(TextDelta(text=content))
        # A refusal comes in its own field; it is the model's answer, so it is the text.
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self._refused = True
            out.append(TextDelta(text=refusal))
        for call_delta in delta.get("tool_calls") or ():
            if isinstance(call_delta, dict):
                self._add_call_delta(call_delta)
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            self._finish = finish
            out += self._flush()
        return out

    def _add_call_delta(self, delta: dict[str, Any]) -> None:
        index, call_id = delta.get("index"), delta.get("id")
        call = self._by_index.get(index) if isinstance(index, int) else None
        # A new id at a known index is a new call (some servers send every call whole
        # with index 0).
        if call is None or (call_id and call.id and call_id != call.id):
            call = _PartialCall(id="")
            self._calls.append(call)
            if isinstance(index, int):
                self._by_index[index] = call
        if isinstance(call_id, str) and call_id and not call.id:
            call.id = call_id
        function = delta.get("function") or {}
        name = function.get("name")
        if isinstance(name, str) and name and not call.name:
            call.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments.append(arguments)
        elif isinstance(arguments, dict):
            call.arguments.append(orjson.dumps(arguments).decode())

    def _flush(self) -> list[ModelEvent]:
        if self._flushed:
            return []
        self._flushed = True
        out: list[ModelEvent] = []
        if self._thinking:
            thinking = Thinking(text="".join(self._thinking), source=self._source)
            out.append(ThinkingDone(block=thinking))
        for call in self._calls:
            if not call.id:
                call.id = f"call_{uuid.uuid4().hex[:24]}"
            out.append(call.ready())
        return out

    def _error(self, chunk: dict[str, Any]) -> ModelError:
        kind, code, message = error_fields(chunk)
        status = int(code) if code and code.isdigit() and len(code) == 3 else None
        return classify(
            provider=self._provider,
            status=status,
            kind=kind,
            code=code,
            message=message or "error in the stream",
        )


def usage_from_wire(usage: dict[str, Any]) -> Usage:
    """OpenAI counts cached prompt tokens inside `prompt_tokens`; we count them apart."""
    details = usage.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    prompt = int(usage.get("prompt_tokens") or 0)
    return Usage(
        input_tokens=max(0, prompt - cached),
        output_tokens=int(usage.get("completion_tokens") or 0),
        cache_read_tokens=cached,
    )


# --- the model ------------------------------------------------------------------------


@final
class OpenAIChatModel:
    """A `Model` over an OpenAI-compatible `/chat/completions` endpoint."""

    def __init__(self, endpoint: OpenAIEndpoint, http: HttpOptions | None = None) -> None:
        self._endpoint = endpoint
        self._http = http or HttpOptions()
        self._wire: AgentWireCaches[Messages] = AgentWireCaches(Messages)

    @property
    def name(self) -> str:
        return f"{self._endpoint.provider}:{self._endpoint.model}"

    @property
    def endpoint(self) -> OpenAIEndpoint:
        return self._endpoint

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self.name!r}, base_url={self._endpoint.base_url!r})"

    def stream(
        self, request: ModelRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[ModelEvent]]:
        ep = self._endpoint
        body = to_wire(
            request,
            model=ep.model,
            max_tokens_field=ep.max_tokens_field,
            default_max_tokens=ep.max_tokens,
            default_temperature=ep.temperature,
            cache=self._wire[request.agent],
            prompt_cache_key=ep.prompt_cache_key,
        )
        call = WireCall(url=ep.url, headers=ep.wire_headers(), body=body)
        return _model_stream(
            self._http,
            call,
            lambda: ChatStreamDecoder(ep.provider, source=self.name),
            provider=ep.provider,
        )
