"""The metrics of a traced run, aggregated here in plain dicts: pure, no OpenTelemetry.
The SDK hashes a measurement's attributes each time it is recorded (about 14 µs, five a
round, on the thread that records); here an ended span is appended to a queue as it
ends, and counted (a tuple lookup and a few additions a measurement) when the metrics
are collected, on the exporter's thread (tracing/otel_metrics.py), which hands the sums
and histograms to OpenTelemetry once per collection, with the names, attributes and
values the SDK's instruments would give them (its default explicit buckets, min and
max, cumulative).

- `gen_ai.client.token.usage` (histogram, tokens): a model call's input and output
  tokens, by `gen_ai.token.type`, operation, agent role, model and provider;
- `gen_ai.client.operation.duration` (histogram, s): a model call's time, by the same
  but the token type;
- `orchestrator.cost` (counter, USD): what the model calls cost, likewise;
- `orchestrator.tool.duration` (histogram, s): a tool call's time, by tool, agent role
  and status.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field

from orchestrator.tracing.ended import Ended

NS = 1e9
BOUNDS: tuple[float, ...] = (0.0, 5.0, 10.0, 25.0, 50.0, 75.0, 100.0, 250.0, 500.0, 750.0)
BOUNDS += (1000.0, 2500.0, 5000.0, 7500.0, 10000.0)
"""The SDK's default explicit bucket boundaries (what its histograms used before)."""

Key = tuple[str | int | float | bool | tuple[str, ...], ...]  # attributes' values
CHAT: tuple[str, ...] = ("gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.request.model")
CHAT += ("gen_ai.provider.name",)
TOKENS: tuple[str, ...] = (*CHAT, "gen_ai.token.type")
TOOL: tuple[str, ...] = ("gen_ai.tool.name", "gen_ai.agent.name", "orchestrator.call.status")
_AGENT, _MODEL, _PROVIDER = "gen_ai.agent.name", "gen_ai.request.model", "gen_ai.provider.name"
_INPUT, _OUTPUT = "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"
_COST, _TOOL, _STATUS = "orchestrator.cost_usd", "gen_ai.tool.name", "orchestrator.call.status"


@dataclass(slots=True)
class Histogram:
    """One histogram's state for one set of attributes."""

    count: int = 0
    sum: float = 0
    min: float = float("inf")
    max: float = float("-inf")
    buckets: list[int] = field(default_factory=lambda: [0] * (len(BOUNDS) + 1))

    def add(self, value: float) -> None:
        self.count += 1
        self.sum += value
        self.min = min(self.min, value)
        self.max = max(self.max, value)
        self.buckets[bisect_left(BOUNDS, value)] += 1

    def copy(self) -> Histogram:
        return Histogram(self.count, self.sum, self.min, self.max, list(self.buckets))


@dataclass(frozen=True)
class Totals:
    """What a collection hands on: each metric's values by its attributes' values (in
    the order of `TOKENS`, `CHAT`, `TOOL`)."""

    tokens: dict[Key, Histogram]
    duration: dict[Key, Histogram]
    cost: dict[Key, float]
    tool: dict[Key, Histogram]


class Measures:
    """The run's metrics: its ended spans taken as they end (`see`, on the trio thread:
    one append), counted into the sums and histograms when they are collected (`totals`,
    from the exporter's thread)."""

    def __init__(self) -> None:
        self._pending: deque[Ended] = deque()  # (append and popleft are thread-safe)
        self._lock = threading.Lock()  # one count at a time
        self._tokens: dict[Key, Histogram] = {}
        self._duration: dict[Key, Histogram] = {}
        self._cost: dict[Key, float] = {}
        self._tool: dict[Key, Histogram] = {}

    def see(self, ended: Ended) -> None:
        """Take `ended` into the metrics (counted if it is a model call or a tool call)."""
        self._pending.append(ended)

    def totals(self) -> Totals:
        """The sums and histograms of the spans seen so far (cumulative: since the run
        started), copied."""
        with self._lock:
            pending = self._pending
            while pending:
                self._count(pending.popleft())
            return Totals(
                {key: h.copy() for key, h in self._tokens.items()},
                {key: h.copy() for key, h in self._duration.items()},
                dict(self._cost),
                {key: h.copy() for key, h in self._tool.items()},
            )

    def _count(self, ended: Ended) -> None:
        kind = ended.kind
        if kind == "chat":
            get = ended.attributes.get
            by: Key = ("chat", get(_AGENT, ""), get(_MODEL, ""), get(_PROVIDER, ""))
            for token_type, name in (("input", _INPUT), ("output", _OUTPUT)):
                tokens = get(name)
                if isinstance(tokens, int):
                    _add(self._tokens, (*by, token_type), tokens)
            _add(self._duration, by, (ended.end - ended.start) / NS)
            cost = get(_COST)
            if isinstance(cost, float | int):
                self._cost[by] = self._cost.get(by, 0.0) + cost
        elif kind == "call":
            get = ended.attributes.get
            by = (get(_TOOL, ""), get(_AGENT, ""), get(_STATUS, ""))
            _add(self._tool, by, (ended.end - ended.start) / NS)


def _add(histograms: dict[Key, Histogram], key: Key, value: float) -> None:
    histogram = histograms.get(key)
    if histogram is None:
        histogram = histograms[key] = Histogram()
    histogram.add(value)
