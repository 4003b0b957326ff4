"""The metrics of a traced run handed to OpenTelemetry's metric exporter: the sums and
histograms tracing/metrics.py keeps, made into the SDK's `MetricsData` once per
collection (every `interval` seconds from a thread of its own, and when the run ends),
cumulative, as the SDK's instruments and periodic reader would have sent them. Imported
only when a run is traced (the `otel` extra)."""

from __future__ import annotations

import logging
import threading
import time

from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricExporter,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from orchestrator.tracing import metrics
from orchestrator.tracing.metrics import BOUNDS, Key, Measures, Totals

_CUMULATIVE = AggregationTemporality.CUMULATIVE
_log = logging.getLogger(__name__)


class MetricsExport:
    """Sends `measures` through `exporter` every `interval` seconds and at `close`."""

    def __init__(
        self,
        measures: Measures,
        exporter: MetricExporter,
        resource: Resource,
        scope: InstrumentationScope,
        interval: float,
    ) -> None:
        self._measures = measures
        self._exporter = exporter
        self._resource = resource
        self._scope = scope
        self._interval = interval
        self._start = time.time_ns()
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one collection at a time
        self._thread = threading.Thread(target=self._tick, name="orchestrator-metrics", daemon=True)
        self._thread.start()

    def collect(self) -> MetricsData:
        """The metrics now, as the SDK's data."""
        return data(self._measures.totals(), self._resource, self._scope, self._start)

    def send(self) -> None:
        """Collect and export now (blocking)."""
        with self._lock:
            collected = self.collect()
            if collected.resource_metrics[0].scope_metrics[0].metrics:
                self._exporter.export(collected)

    def close(self) -> None:
        """The last collection, then the exporter's shutdown (blocking)."""
        self._stop.set()
        self._thread.join()
        self.send()
        self._exporter.shutdown()

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.send()
            except Exception:  # (as the SDK's periodic reader: logged, tried again next time)
                _log.exception("exporting metrics failed")


def data(
    totals: Totals, resource: Resource, scope: InstrumentationScope, start: int
) -> MetricsData:
    """`totals` as the SDK's `MetricsData` (the metrics with no values left out)."""
    now = time.time_ns()
    made = [
        _histogram(
            "gen_ai.client.token.usage",
            "{token}",
            "tokens of a model call",
            totals.tokens,
            metrics.TOKENS,
            start,
            now,
        ),
        _histogram(
            "gen_ai.client.operation.duration",
            "s",
            "a model call's time",
            totals.duration,
            metrics.CHAT,
            start,
            now,
        ),
        _sum(totals.cost, start, now),
        _histogram(
            "orchestrator.tool.duration",
            "s",
            "a tool call's time",
            totals.tool,
            metrics.TOOL,
            start,
            now,
        ),
    ]
    scoped = ScopeMetrics(scope, [m for m in made if m is not None], scope.schema_url or "")
    return MetricsData([ResourceMetrics(resource, [scoped], resource.schema_url)])


def _histogram(
    name: str,
    unit: str,
    description: str,
    values: dict[Key, metrics.Histogram],
    names: tuple[str, ...],
    start: int,
    now: int,
) -> Metric | None:
    if not values:
        return None
    points = [
        HistogramDataPoint(
            attributes=dict(zip(names, key, strict=True)),
            start_time_unix_nano=start,
            time_unix_nano=now,
            count=h.count,
            sum=h.sum,
            bucket_counts=h.buckets,
            explicit_bounds=BOUNDS,
            min=h.min,
            max=h.max,
        )
        for key, h in values.items()
    ]
    return Metric(name, description, unit, Histogram(points, _CUMULATIVE))


def _sum(values: dict[Key, float], start: int, now: int) -> Metric | None:
    if not values:
        return None
    points = [
        NumberDataPoint(dict(zip(metrics.CHAT, key, strict=True)), start, now, value)
        for key, value in values.items()
    ]
    data_ = Sum(points, _CUMULATIVE, is_monotonic=True)
    return Metric("orchestrator.cost", "what the model calls cost", "USD", data_)
