"""The OpenAI Responses API (`POST /responses`), streamed.

`to_wire` and `ResponsesStreamDecoder` are pure; `OpenAIResponsesModel.stream` is the one
HTTP call. Every request says `store: false`, so the provider keeps nothing of the
conversation, and asks for `reasoning.encrypted_content`: each reasoning item comes back
encrypted, is kept on the assistant message (as Anthropic's thinking blocks are) and is
sent back unchanged on the agent's later requests, so the model keeps its reasoning
across the turns of a tool loop without the provider storing it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, aclosing
from dataclasses import dataclass, field
from functools import partial
from typing import Any, assert_never, final

from orchestrator.errors import ProviderBadRequest
from orchestrator.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    Thinking,
    ToolResult,
    UserMessage,
)
from orchestrator.models.base import AgentWireCaches, ModelEvent, ModelRequest, WireCache
from orchestrator.models.call_ids import OPENAI, CallIds
from orchestrator.models.http import HttpOptions, WireCall, bearer_headers
from orchestrator.models.http import model_stream as _model_stream
from orchestrator.models.openai_responses_stream import ResponsesStreamDecoder, reasoning_item

# OpenAI's words (HTTP 400, param `include`) when a model has no reasoning to encrypt.
_ENCRYPTED_REFUSED = "encrypted content is not supported"

_RESULT_PREFIX = {
    "ok": "",
    "error": "Error: ",
    "cancelled": "Cancelled: ",
    "interrupted": "Interrupted: ",
    "unapproved": "Error: ",
}


@dataclass(frozen=True)
class ResponsesEndpoint:
    """Where and how to reach the Responses API. The key is kept out of repr."""

    model: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict)
    max_tokens: int | None = None
    temperature: float | None = None  # when the request gives none (a role's own)
    prompt_cache_key: bool = True  # send the request's cache key
    provider: str = "openai-responses"

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/responses"

    def wire_headers(self) -> dict[str, str]:
        return bearer_headers(self.headers, self.api_key)


# --- request --------------------------------------------------------------------------


def to_wire(
    request: ModelRequest,
    *,
    model: str,
    provider: str = "openai-responses",
    default_max_tokens: int | None = None,
    default_temperature: float | None = None,
    cache: WireCache[Items] | None = None,
    prompt_cache_key: bool = True,
    encrypted_reasoning: bool = True,
) -> dict[str, Any]:
    """The JSON body of a streamed, unstored response for `request`. With the `cache` of
    the asking agent, only messages added since its last request are translated.
    `encrypted_reasoning` asks for the reasoning items' encrypted content (a model that
    does not reason refuses that). Reasoning items go back only to the model that made
    them (`provider:model`).

    `request.stop` is not sent: the Responses API has no stop sequences."""
    wire, new = (cache or WireCache(Items)).feed(request.messages)
    source = f"{provider}:{model}"
    for message in new:
        wire.add(message, source)
    body: dict[str, Any] = {
        "model": model,
        "input": wire.items[:],
        "stream": True,
        "store": False,
    }
    if encrypted_reasoning:
        body["include"] = ["reasoning.encrypted_content"]
    if request.note:  # this request's only: after the cached wire form, never in it
        body["input"].append({"role": "user", "content": request.note})
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,  # our schemas are not written for strict mode
            }
            for t in request.tools
        ]
        body["tool_choice"] = _tool_choice(request.tool_choice)
    max_tokens = request.max_tokens or default_max_tokens
    if max_tokens is not None:
        body["max_output_tokens"] = max_tokens
    temperature = request.temperature if request.temperature is not None else default_temperature
    if temperature is not None:
        body["temperature"] = temperature
    if prompt_cache_key and request.cache_key:
        # Agents of one role in one session share their prefix, so they share a key.
        body["prompt_cache_key"] = request.cache_key
    return body


class Items:
    """A context as input items, built one message at a time; call ids go through
    `CallIds`, so that ids made by other providers are ones the API takes."""

    __slots__ = ("_ids", "items")

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self._ids = CallIds(OPENAI)

    def add(self, message: Message, source: str) -> None:
        """The input items of one message, for the model named `source`."""
        match message:
            case SystemMessage(content=content):
                self.items.append({"role": "system", "content": content})
            case UserMessage(content=content):
                self.items.append({"role": "user", "content": content})
            case AssistantMessage(text=text, tool_calls=calls, thinking=thinking):
                # Reasoning first, as the model produced it; another model's is left out.
                self.items += [
                    item for block in thinking if (item := _own_reasoning(block, source))
                ]
                if text:
                    self.items.append({"role": "assistant", "content": text})
                self.items += [
                    {
                        "type": "function_call",
                        "call_id": self._ids.call(c.id),
                        "name": c.name,
                        "arguments": c.arguments,
                    }
                    for c in calls
                ]
            case ToolResult(call_id=call_id, status=status, content=content):
                output = _RESULT_PREFIX[status] + content
                sent = self._ids.result(call_id)
                self.items.append(
                    {"type": "function_call_output", "call_id": sent, "output": output}
                )
            case _:
                assert_never(message)


def _own_reasoning(block: Thinking, source: str) -> dict[str, Any] | None:
    """The reasoning item `block` holds if the model named `source` made it (or, in a
    session recorded before thinking named its model, if it holds one at all)."""
    if block.source is not None and block.source != source:
        return None
    return reasoning_item(block)


def _tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "name": choice}


# --- the model ------------------------------------------------------------------------


@final
class OpenAIResponsesModel:
    """A `Model` over the OpenAI Responses API."""

    def __init__(self, endpoint: ResponsesEndpoint, http: HttpOptions | None = None) -> None:
        self._endpoint = endpoint
        self._http = http or HttpOptions()
        self._wire: AgentWireCaches[Items] = AgentWireCaches(Items)
        # Until the model says it does not reason (it refuses the encrypted content).
        self._encrypted_reasoning = True

    @property
    def name(self) -> str:
        return f"{self._endpoint.provider}:{self._endpoint.model}"

    @property
    def endpoint(self) -> ResponsesEndpoint:
        return self._endpoint

    def __repr__(self) -> str:
        return f"OpenAIResponsesModel({self.name!r}, base_url={self._endpoint.base_url!r})"

    def stream(
        self, request: ModelRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[ModelEvent]]:
        return aclosing(self._events(request))

    async def _events(self, request: ModelRequest) -> AsyncGenerator[ModelEvent]:
        """The call's events. A model that does not reason (gpt-4o, gpt-4.1) answers a
        request for encrypted reasoning with a 400: it is asked again without, once, and
        this model asks that no more."""
        ep = self._endpoint
        while True:
            body = to_wire(
                request,
                model=ep.model,
                provider=ep.provider,
                default_max_tokens=ep.max_tokens,
                default_temperature=ep.temperature,
                cache=self._wire[request.agent],
                prompt_cache_key=ep.prompt_cache_key,
                encrypted_reasoning=self._encrypted_reasoning,
            )
            call = WireCall(url=ep.url, headers=ep.wire_headers(), body=body)
            decoder = partial(ResponsesStreamDecoder, ep.provider, source=self.name)
            yielded = False
            try:
                async with _model_stream(self._http, call, decoder, provider=ep.provider) as events:
                    async for event in events:
                        yielded = True
                        yield event
                return
            except ProviderBadRequest as exc:
                refused = _ENCRYPTED_REFUSED in str(exc).lower()
                if yielded or not refused or not self._encrypted_reasoning:
                    raise
                self._encrypted_reasoning = False
