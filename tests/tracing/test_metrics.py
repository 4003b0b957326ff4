"""The metrics a traced run exports (issue 43, item 5): aggregated by the run itself
(tracing/metrics.py) and handed to OpenTelemetry once per collection, they are what the
SDK's own instruments give for the same measurements: names, units, attributes, counts,
sums, buckets, minima and maxima."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import Histogram, InMemoryMetricReader, MetricsData, Sum
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orchestrator.tracing import Ended, Telemetry
from orchestrator.tracing.ended import Attributes
from orchestrator.tracing.otel import Exporter
from tests.tracing.memory import MemoryMetricExporter

NS = 1e9
TRACE = "ab" * 16


def _chat(
    n: int, agent: str, model: str, tokens: tuple[int, int] | None, cost: float | None
) -> Ended:
    attributes: Attributes = {
        "gen_ai.agent.name": agent,
        "gen_ai.request.model": model,
        "gen_ai.provider.name": "scripted",
    }
    if tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = tokens[0]
        attributes["gen_ai.usage.output_tokens"] = tokens[1]
    if cost is not None:
        attributes["orchestrator.cost_usd"] = cost
    start = 1_000 * n
    return Ended(
        f"chat:{agent}:{n}",
        f"chat {model}",
        "turn:main:1",
        start,
        start + n * 37_000_000,
        attributes,
    )


def _call(n: int, tool: str, agent: str, status: str) -> Ended:
    attributes: Attributes = {
        "gen_ai.tool.name": tool,
        "gen_ai.agent.name": agent,
        "orchestrator.call.status": status,
    }
    start = 5_000 * n
    return Ended(
        f"call:{n}.0",
        f"execute_tool {tool}",
        "turn:main:1",
        start,
        start + n**2 * 900_000,
        attributes,
    )


SPANS = [
    *(_chat(n, "main", "m1", (n * 317, n * 41), 0.001 * n) for n in range(1, 40)),
    *(_chat(n, "worker", "m2", (n * 5, 0), None) for n in range(1, 9)),
    _chat(3, "worker", "m1", None, 0.25),
    _chat(4, "reviewer", "m1", (25, 10_000), 0),
    *(_call(n, "shell", "worker", "ok" if n % 3 else "error") for n in range(1, 60)),
    _call(1, "read", "main", "ok"),
    Ended("turn:main:1", "invoke_agent main", "run:1", 0, 10, {"gen_ai.agent.name": "main"}),
]


def _as_sdk(spans: list[Ended]) -> MetricsData:
    """What the SDK's instruments make of the spans' measurements (the metrics as they
    were recorded before the run aggregated them itself)."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    meter = provider.get_meter("orchestrator")
    tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}")
    duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s")
    cost = meter.create_counter("orchestrator.cost", unit="USD")
    tool = meter.create_histogram("orchestrator.tool.duration", unit="s")
    for ended in spans:
        attributes = ended.attributes
        if ended.kind == "chat":
            by = {
                "gen_ai.operation.name": "chat",
                "gen_ai.agent.name": attributes.get("gen_ai.agent.name", ""),
                "gen_ai.request.model": attributes.get("gen_ai.request.model", ""),
                "gen_ai.provider.name": attributes.get("gen_ai.provider.name", ""),
            }
            for kind, name in (("input", "input_tokens"), ("output", "output_tokens")):
                value = attributes.get(f"gen_ai.usage.{name}")
                if isinstance(value, int):
                    tokens.record(value, {**by, "gen_ai.token.type": kind})
            duration.record((ended.end - ended.start) / NS, by)
            spent = attributes.get("orchestrator.cost_usd")
            if isinstance(spent, float | int):
                cost.add(spent, by)
        elif ended.kind == "call":
            by = {
                "gen_ai.tool.name": attributes.get("gen_ai.tool.name", ""),
                "gen_ai.agent.name": attributes.get("gen_ai.agent.name", ""),
                "orchestrator.call.status": attributes.get("orchestrator.call.status", ""),
            }
            tool.record((ended.end - ended.start) / NS, by)
    data = reader.get_metrics_data()
    provider.shutdown()
    assert data is not None
    return data


def _values(data: MetricsData) -> dict[tuple[str, str], Any]:
    """Each metric's points by attributes, with its kind, temporality and unit."""
    shown: dict[tuple[str, str], Any] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points: dict[frozenset[tuple[str, Any]], Any] = {}
                for point in metric.data.data_points:
                    key = frozenset(point.attributes.items())  # type: ignore[union-attr]
                    if isinstance(metric.data, Histogram):
                        points[key] = (
                            point.count,  # type: ignore[union-attr]
                            pytest.approx(point.sum, rel=1e-12),  # type: ignore[union-attr]
                            list(point.bucket_counts),  # type: ignore[union-attr]
                            tuple(point.explicit_bounds),  # type: ignore[union-attr]
                            point.min,  # type: ignore[union-attr]
                            point.max,  # type: ignore[union-attr]
                        )
                    else:
                        points[key] = pytest.approx(point.value, rel=1e-12)  # type: ignore[union-attr]
                data_ = metric.data
                monotonic = data_.is_monotonic if isinstance(data_, Sum) else None
                temporality = getattr(data_, "aggregation_temporality", None)
                shown[(metric.name, metric.unit or "")] = (
                    type(data_).__name__,
                    temporality,
                    monotonic,
                    points,
                )
    return shown


def test_the_run_s_metrics_are_the_sdk_s_for_the_same_measurements() -> None:
    memory = MemoryMetricExporter()
    exporter = Exporter(
        TRACE, Telemetry(), span_exporter=InMemorySpanExporter(), metric_exporter=memory
    )
    for ended in SPANS:
        exporter.export(ended)
    exporter.close()
    assert memory.shut_down
    (data,) = memory.exported  # one collection: when the run ends
    ours, sdk = _values(data), _values(_as_sdk(SPANS))
    assert (
        sorted(ours)
        == sorted(sdk)
        == [
            ("gen_ai.client.operation.duration", "s"),
            ("gen_ai.client.token.usage", "{token}"),
            ("orchestrator.cost", "USD"),
            ("orchestrator.tool.duration", "s"),
        ]
    )
    assert ours == sdk
    (scope,) = data.resource_metrics[0].scope_metrics
    assert scope.scope.name == "orchestrator"
    assert data.resource_metrics[0].resource.attributes["service.name"] == "orchestrator"


def test_metrics_go_every_interval_and_not_with_metrics_off() -> None:
    memory = MemoryMetricExporter()
    telemetry = Telemetry(metric_interval=0.01)
    exporter = Exporter(
        TRACE, telemetry, span_exporter=InMemorySpanExporter(), metric_exporter=memory
    )
    exporter.export(SPANS[0])
    assert memory.first.wait(10)  # sent by the exporter's thread, before the run ends
    exporter.close()
    assert all(_values(data) == _values(_as_sdk(SPANS[:1])) for data in memory.exported)

    off = MemoryMetricExporter()
    exporter = Exporter(
        TRACE, Telemetry(metrics=False), span_exporter=InMemorySpanExporter(), metric_exporter=off
    )
    exporter.export(SPANS[0])
    exporter.close()
    assert (off.exported, off.shut_down) == ([], False)


def test_spans_read_back_are_not_measured() -> None:
    memory = MemoryMetricExporter()
    exporter = Exporter(
        TRACE, Telemetry(), span_exporter=InMemorySpanExporter(), metric_exporter=memory
    )
    exporter.export(SPANS[0], measure=False)
    exporter.close()
    assert memory.exported == []
