"""A span as `Spans` (tracing/spans.py) keeps it open and hands it on ended, its id (a hash
of the trace's id and the span's key, so whoever derives it names it alike), its
`traceparent`, and the attributes it carries: the GenAI conventions' usage and model, and
what the item that ends it adds (`finish`)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from orchestrator.loop.compaction import ContextCompacted
from orchestrator.messages import Usage
from orchestrator.prices.cost import Price, call_cost
from orchestrator.state.events import CallResult, TurnEnded
from orchestrator.state.tasks import TaskChanged

SEMCONV = "1.44.0"
"""The version of OpenTelemetry's semantic conventions for generative AI the spans follow
(`gen_ai.*`, checked against opentelemetry-semantic-conventions 0.66b2, which ships
that schema; the GenAI conventions are still in development)."""
CONTENT_CHARS = 4096  # captured arguments and results, at most (with `capture_content`)
INTERRUPTED = "interrupted"

Attributes = dict[str, str | int | float | bool | tuple[str, ...]]


class Open(msgspec.Struct):
    key: str
    name: str
    parent: str | None
    start: int  # ns since the epoch
    attributes: Attributes


@dataclass(frozen=True, slots=True)
class Ended:
    key: str
    name: str
    parent: str | None
    start: int
    end: int
    attributes: Attributes
    error: str = ""  # the status's description when it failed ("": it did not)

    @property
    def kind(self) -> str:
        return self.key.partition(":")[0]


def span_id(trace_id: str, key: str) -> int:
    """The 64-bit span id of `key` in the trace `trace_id` (never 0)."""
    digest = hashlib.blake2b(f"{trace_id}/{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") or 1


def traceparent(trace_id: str, key: str) -> str:
    """The W3C `traceparent` naming span `key` of the trace (sampled)."""
    return f"00-{trace_id}-{span_id(trace_id, key):016x}-01"


def call_key(ref: str) -> str:
    return f"call:{ref}"


def provider_and_model(spec: str) -> tuple[str, str]:
    provider, sep, model = spec.partition(":")
    return (provider, model) if sep else ("", spec)


def usage_attributes(usage: Usage, cost: float | None) -> Attributes:
    attributes: Attributes = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
    }
    if cost is not None:
        attributes["orchestrator.cost_usd"] = cost
    return attributes


def finish(attributes: Attributes, item: Any, prices: Mapping[str, Price], capture: bool) -> str:
    """What the item that ends a span adds to it; the error it ends with ("": none)."""
    match item:
        case TurnEnded(reason=reason, rounds=rounds):
            attributes["orchestrator.turn.reason"] = reason
            attributes["orchestrator.turn.rounds"] = rounds
            return "failed" if reason == "failed" else ""
        case CallResult(status=status, content=content):
            attributes["orchestrator.call.status"] = status
            if capture:
                attributes["gen_ai.tool.call.result"] = content[:CONTENT_CHARS]
            return "" if status == "ok" else status
        case TaskChanged(state=state, reason=reason):
            attributes["orchestrator.task.state"] = state
            return (reason or state) if state == "failed" else ""
        case ContextCompacted():
            attributes["orchestrator.compaction.method"] = item.method
            attributes["orchestrator.compaction.before"] = item.before
            attributes["orchestrator.compaction.after"] = item.after
            if item.usage is not None:
                cost = call_cost(prices, item.model, item.usage)
                attributes.update(usage_attributes(item.usage, cost))
                attributes["gen_ai.request.model"] = provider_and_model(item.model)[1]
            return ""
        case _:
            return ""
