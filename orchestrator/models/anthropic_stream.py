"""Decoding an Anthropic Messages stream (its server-sent events) into the model protocol's
events: text and thinking as they arrive, each tool call once whole, usage at the end.
"""

from __future__ import annotations

from typing import Any, final

import msgspec
import orjson

from orchestrator.errors import ProviderTransient
from orchestrator.messages import (
    Thinking,
    ToolCall,
    Usage,
)
from orchestrator.models.base import (
    ModelEvent,
    StreamEnded,
    TextDelta,
    ThinkingDelta,
    ThinkingDone,
    ToolCallReady,
    UsageReported,
)
from orchestrator.models.failures import classify, error_fields
from orchestrator.models.http import json_data
from orchestrator.models.sse import ServerSentEvent


class _Block(msgspec.Struct):
    type: str
    id: str = ""
    name: str = ""
    parts: list[str] = msgspec.field(default_factory=list)
    signature: str = ""
    initial_input: object = None

    def event(self, source: str | None) -> ModelEvent | None:
        """What a finished block contributes (text was already streamed); thinking is
        marked as `source`'s."""
        text = "".join(self.parts)
        if self.type == "tool_use":
            if not text and self.initial_input:
                text = orjson.dumps(self.initial_input).decode()
            return ToolCallReady(call=ToolCall(id=self.id, name=self.name, arguments=text or "{}"))
        if self.type == "thinking":
            signature = self.signature or None
            return ThinkingDone(block=Thinking(text=text, signature=signature, source=source))
        if self.type == "redacted_thinking":
            return ThinkingDone(block=Thinking(redacted=text, source=source))
        return None


@final
class MessagesStreamDecoder:
    """Messages stream events to model events. A tool call is emitted at its
    `content_block_stop` with its raw argument text (unfinished after a max_tokens stop:
    the turn loop asks again, agent/recovery.py, and never runs it). `source` names the
    model (`Model.name`) its thinking is marked with, so that only that model gets it back."""

    def __init__(self, provider: str, *, source: str | None = None) -> None:
        self._provider = provider
        self._source = source
        self._blocks: dict[int, _Block] = {}
        self._usage: dict[str, int] = {}
        self._stop_reason: str | None = None
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, event: ServerSentEvent) -> list[ModelEvent]:
        payload = json_data(event, self._provider)
        if not isinstance(payload, dict):
            return []
        match payload.get("type", event.event):
            case "message_start":
                self._add_usage((payload.get("message") or {}).get("usage"))
            case "content_block_start":
                return self._start(payload)
            case "content_block_delta":
                return self._delta(payload)
            case "content_block_stop":
                block = self._blocks.pop(payload.get("index", -1), None)
                done = block.event(self._source) if block is not None else None
                return [] if done is None else [done]
            case "message_delta":
                reason = (payload.get("delta") or {}).get("stop_reason")
                if isinstance(reason, str):
                    self._stop_reason = reason
                self._add_usage(payload.get("usage"))
            case "message_stop":
                self._done = True
            case "error":
                kind, code, message = error_fields(payload)
                raise classify(
                    provider=self._provider,
                    status=None,
                    kind=kind,
                    code=code,
                    message=message or "error in the stream",
                )
            case _:
                pass  # ping, and event types added after this was written
        return []

    def finish(self) -> list[ModelEvent]:
        if not self._done and self._stop_reason is None:
            raise ProviderTransient(
                "the stream ended before the model finished", provider=self._provider
            )
        out: list[ModelEvent] = []
        for index in sorted(self._blocks):  # blocks a cut-off stream never closed
            done = self._blocks[index].event(self._source)
            if done is not None:
                out.append(done)
        self._blocks.clear()
        u = self._usage
        out.append(
            UsageReported(
                usage=Usage(
                    input_tokens=u.get("input_tokens", 0),
                    output_tokens=u.get("output_tokens", 0),
                    cache_read_tokens=u.get("cache_read_input_tokens", 0),
                    cache_write_tokens=u.get("cache_creation_input_tokens", 0),
                )
            )
        )
        out.append(StreamEnded(stop_reason=self._stop_reason))
        return out

    def _start(self, payload: dict[str, Any]) -> list[ModelEvent]:
        raw = payload.get("content_block") or {}
        block = _Block(
            type=str(raw.get("type", "")),
            id=str(raw.get("id", "")),
            name=str(raw.get("name", "")),
            signature=str(raw.get("signature") or ""),
            initial_input=raw.get("input"),
        )
        self._blocks[payload.get("index", -1)] = block
        initial = raw.get("text") or raw.get("thinking") or raw.get("data")
        if not isinstance(initial, str) or not initial:
            return []
        block.parts.append(initial)
        if block.type == "text":
            return [TextDelta(text=initial)]
        return [ThinkingDelta(text=initial)] if block.type == "thinking" else []

    def _delta(self, payload: dict[str, Any]) -> list[ModelEvent]:
        block = self._blocks.get(payload.get("index", -1))
        delta = payload.get("delta") or {}
        if block is None:
            return []
        match delta.get("type"):
            case "text_delta":
                text = str(delta.get("text", ""))
                block.parts.append(text)
                return [TextDelta(text=text)] if text else []
            case "thinking_delta":
                text = str(delta.get("thinking", ""))
                block.parts.append(text)
                return [ThinkingDelta(text=text)] if text else []
            case "signature_delta":
                block.signature += str(delta.get("signature", ""))
            case "input_json_delta":
                block.parts.append(str(delta.get("partial_json", "")))
            case _:
                pass  # citations and later additions
        return []

    def _add_usage(self, usage: object) -> None:
        # message_delta's counts are cumulative, so later values replace earlier ones.
        if isinstance(usage, dict):
            for key, value in usage.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    self._usage[key] = value


# --- the model ------------------------------------------------------------------------
