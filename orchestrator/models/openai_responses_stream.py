"""Decoding an OpenAI Responses stream (its server-sent events, each a JSON object with a
`type`) into the model protocol's events: text and reasoning summaries as they arrive,
each function call once its item is done, each reasoning item kept whole (with its
encrypted content) so it can be sent back, usage at the end.
"""

from __future__ import annotations

from typing import Any, final

import msgspec
import orjson

from orchestrator.errors import ModelError, ProviderFatal, ProviderTransient
from orchestrator.messages import Thinking, ToolCall, Usage
from orchestrator.models.base import (
    MAX_TOKENS,
    ModelEvent,
    StreamEnded,
    TextDelta,
    ThinkingDelta,
    ThinkingDone,
    ToolCallReady,
    UsageReported,
)
from orchestrator.models.failures import classify
from orchestrator.models.http import json_data
from orchestrator.models.sse import ServerSentEvent

# Why a response stopped short, in the vocabulary the rest of the code uses (the chat
# completions adapter's); unknown reasons pass through unchanged.
INCOMPLETE_REASONS = {"max_output_tokens": MAX_TOKENS}


def reasoning_block(item: dict[str, Any], source: str | None = None) -> Thinking:
    """A reasoning output item as the `Thinking` kept on the assistant message: its
    summary as the text, the item itself (its id, summary and encrypted content; fields
    that are null left out) as JSON in `signature`, to be sent back unchanged to the
    model named `source`, which made it. (A signature that is a JSON object is how the
    adapters tell these items from Anthropic's base64 signatures in sessions recorded
    before thinking named its model.)"""
    kept = {k: v for k, v in item.items() if v is not None}
    summary = kept.get("summary") or ()
    text = "\n\n".join(
        part["text"] for part in summary if isinstance(part, dict) and "text" in part
    )
    return Thinking(text=text, signature=orjson.dumps(kept).decode(), source=source)


def reasoning_item(block: Thinking) -> dict[str, Any] | None:
    """The reasoning item a `Thinking` of `reasoning_block` holds; None for any other
    provider's reasoning, which the Responses API cannot take back."""
    if not block.signature or not block.signature.startswith("{"):
        return None
    try:
        item = orjson.loads(block.signature)
    except orjson.JSONDecodeError:
        return None
    return item if isinstance(item, dict) and item.get("type") == "reasoning" else None


class _PartialCall(msgspec.Struct):
    call_id: str = ""
    name: str = ""
    arguments: list[str] = msgspec.field(default_factory=list)


@final
class ResponsesStreamDecoder:
    """Responses stream events to model events. Function calls are assembled per
    `output_index` (parallel calls may interleave) and emitted when their item is done,
    with the arguments the done item states (the deltas, joined, where it states none);
    the stream ends at `response.completed` or `response.incomplete`. Reasoning items are
    marked as `source`'s (`Model.name`)."""

    def __init__(self, provider: str, *, source: str | None = None) -> None:
        self._provider = provider
        self._source = source
        self._calls: dict[int, _PartialCall] = {}
        self._called = False
        self._streamed: set[int] = set()  # output items whose text came as deltas
        self._refused = False
        self._usage: Usage | None = None
        self._stop: str | None = None
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, event: ServerSentEvent) -> list[ModelEvent]:
        payload = json_data(event, self._provider)
        if not isinstance(payload, dict):
            raise ProviderFatal(f"unexpected event: {event.data[:200]!r}", provider=self._provider)
        index = payload.get("output_index", -1)
        match payload.get("type", event.event):
            case "response.output_text.delta":
                return self._text(index, payload.get("delta"))
            case "response.refusal.delta":
                # A refusal is the model's answer, so it is the text (as in chat completions).
                self._refused = True
                return self._text(index, payload.get("delta"))
            case "response.reasoning_summary_text.delta" | "response.reasoning_text.delta":
                delta = payload.get("delta")
                return [ThinkingDelta(text=delta)] if isinstance(delta, str) and delta else []
            case "response.output_item.added":
                self._start(index, payload.get("item"))
            case "response.function_call_arguments.delta":
                call = self._calls.setdefault(index, _PartialCall())
                call.arguments.append(str(payload.get("delta", "")))
            case "response.output_item.done":
                return self._item_done(index, payload.get("item"))
            case "response.completed" | "response.incomplete":
                self._end(payload.get("response"))
            case "response.failed":
                response = payload.get("response") or {}
                raise self._error(response.get("error") or {}, "the response failed")
            case "error":
                raise self._error(payload, "error in the stream")
            case _:
                pass  # created, in_progress, content parts, *.done texts, later additions
        return []

    def finish(self) -> list[ModelEvent]:
        if not self._done:
            raise ProviderTransient(
                "the stream ended before the model finished", provider=self._provider
            )
        # Calls whose item never finished (a response cut at its output limit mid-call):
        # emitted with the arguments that came, so the turn loop knows a call was cut.
        out: list[ModelEvent] = [self._ready({}, self._calls[i]) for i in sorted(self._calls)]
        self._called |= bool(self._calls)
        self._calls.clear()
        if self._usage is not None:
            out.append(UsageReported(usage=self._usage))
        reason = self._stop
        if reason == "end_turn" and self._called:
            reason = "tool_use"
        elif reason == "end_turn" and self._refused:
            reason = "refusal"
        out.append(StreamEnded(stop_reason=reason))
        return out

    def _text(self, index: object, delta: object) -> list[ModelEvent]:
        if not isinstance(delta, str) or not delta:
            return []
        if isinstance(index, int):
            self._streamed.add(index)
        return [TextDelta(text=delta)]

    def _start(self, index: object, item: object) -> None:
        if (
            isinstance(item, dict)
            and item.get("type") == "function_call"
            and isinstance(index, int)
        ):
            call = self._calls.setdefault(index, _PartialCall())
            call.call_id = str(item.get("call_id") or "")
            call.name = str(item.get("name") or "")

    def _item_done(self, index: object, item: object) -> list[ModelEvent]:
        if not isinstance(item, dict):
            return []
        match item.get("type"):
            case "function_call":
                call = self._calls.pop(index, None) if isinstance(index, int) else None
                self._called = True
                return [self._ready(item, call or _PartialCall())]
            case "reasoning":
                return [ThinkingDone(block=reasoning_block(item, self._source))]
            case "message" if index not in self._streamed:
                # A server that sent the message whole, without deltas.
                parts = [p for p in item.get("content") or () if isinstance(p, dict)]
                self._refused |= any(p.get("type") == "refusal" for p in parts)
                text = "".join(str(p.get("text") or p.get("refusal") or "") for p in parts)
                return self._text(index, text)
            case _:
                return []

    @staticmethod
    def _ready(item: dict[str, Any], call: _PartialCall) -> ToolCallReady:
        """A function call, from its done item where there is one, else from its deltas."""
        arguments = item.get("arguments")
        if not isinstance(arguments, str) or not arguments:
            arguments = "".join(call.arguments)
        return ToolCallReady(
            call=ToolCall(
                id=str(item.get("call_id") or call.call_id),
                name=str(item.get("name") or call.name),
                arguments=arguments or "{}",
            )
        )

    def _end(self, response: object) -> None:
        self._done = True
        if not isinstance(response, dict):
            return
        usage = response.get("usage")
        if isinstance(usage, dict):
            self._usage = usage_from_wire(usage)
        details = response.get("incomplete_details") or {}
        reason = details.get("reason") if isinstance(details, dict) else None
        if isinstance(reason, str) and reason:
            self._stop = INCOMPLETE_REASONS.get(reason, reason)
        else:
            self._stop = "end_turn"

    def _error(self, error: dict[str, Any], default: str) -> ModelError:
        code, message = error.get("code"), error.get("message")
        return classify(
            provider=self._provider,
            status=None,
            kind=None,
            code=None if code is None else str(code),
            message=message if isinstance(message, str) and message else default,
        )


def usage_from_wire(usage: dict[str, Any]) -> Usage:
    """The Responses API counts cached (and cache-written) input tokens inside
    `input_tokens`, and reasoning tokens inside `output_tokens`; we count the cache apart
    and reasoning as output, which it is billed as."""
    details = usage.get("input_tokens_details") or {}
    if not isinstance(details, dict):
        details = {}
    cached = int(details.get("cached_tokens") or 0)
    written = int(details.get("cache_write_tokens") or 0)
    return Usage(
        input_tokens=max(0, int(usage.get("input_tokens") or 0) - cached - written),
        output_tokens=int(usage.get("output_tokens") or 0),
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )
