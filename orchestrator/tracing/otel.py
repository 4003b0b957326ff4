"""OpenTelemetry's SDK side of tracing: each ended span (tracing/spans.py) handed to the
SDK's batch exporter as one span with the id its key gives, under its parent's id; and
the metrics of the spans this process saw end. Imported only when a run is traced (the
`otel` extra)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics.export import MetricExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

from orchestrator._version import __version__
from orchestrator.tracing.ended import SEMCONV, Ended, span_id
from orchestrator.tracing.metrics import Measures
from orchestrator.tracing.otel_metrics import MetricsExport

if TYPE_CHECKING:
    from orchestrator.tracing.settings import Telemetry

_SAMPLED = trace.TraceFlags(trace.TraceFlags.SAMPLED)
_KINDS = {"chat": SpanKind.CLIENT}
_UNSET = Status(StatusCode.UNSET)
PARENTS = 4096  # span contexts of parents kept


class Exporter:
    """The SDK's span processor (and the metrics) of one traced run, to OTLP/HTTP unless
    given a span exporter and a metric exporter (tests, the overhead bench). `joined`
    gives the exporter of another trace through the same processor and metrics (a
    worker's tasks, each in its session's trace)."""

    def __init__(
        self,
        trace_id: str,
        telemetry: Telemetry,
        *,
        span_exporter: SpanExporter | None = None,
        metric_exporter: MetricExporter | None = None,
    ) -> None:
        self.trace_id = trace_id
        self._trace = int(trace_id, 16)
        self._parents: dict[str, SpanContext] = {}
        self._owner = True  # (its processor and metrics are its own to close)
        resource = self._resource = Resource.create({"service.name": telemetry.service})
        base = telemetry.endpoint
        exporter = span_exporter or OTLPSpanExporter(endpoint=f"{base}/v1/traces" if base else None)
        # Our spans have ended when they are made (derived from the journal's events, with
        # their own ids and times): each goes to the batch processor as a `ReadableSpan`,
        # without the tracer's live-span machinery, which costs several times as much.
        self._processor = BatchSpanProcessor(exporter)
        schema = f"https://opentelemetry.io/schemas/{SEMCONV}"
        self._scope = InstrumentationScope("orchestrator", __version__, schema_url=schema)
        self._measures: Measures | None = None
        self._metrics: MetricsExport | None = None
        if telemetry.metrics:
            self._measures = Measures()
            self._metrics = MetricsExport(
                self._measures,
                metric_exporter
                or OTLPMetricExporter(endpoint=f"{base}/v1/metrics" if base else None),
                resource,
                self._scope,
                telemetry.metric_interval,
            )

    def export(self, ended: Ended, *, measure: bool = True) -> None:
        """Hand the SDK's span of `ended` to the exporter; count it in the metrics if
        `measure`."""
        parent = None if ended.parent is None else self._context(ended.parent)
        span = ReadableSpan(
            ended.name,
            context=SpanContext(self._trace, span_id(self.trace_id, ended.key), False, _SAMPLED),
            parent=parent,
            resource=self._resource,
            attributes=ended.attributes,
            kind=_KINDS.get(ended.kind, SpanKind.INTERNAL),
            status=Status(StatusCode.ERROR, ended.error) if ended.error else _UNSET,
            start_time=ended.start,
            end_time=ended.end,
            instrumentation_scope=self._scope,
        )
        self._processor.on_end(span)
        if measure and self._measures is not None:
            self._measures.see(ended)

    def joined(self, trace_id: str) -> Exporter:
        """The exporter of trace `trace_id` through this one's span processor (its queue
        and thread) and metrics (their sums and thread): closed with this one; its own
        `close` sends what is queued and stops nothing."""
        other = copy.copy(self)
        other.trace_id, other._trace = trace_id, int(trace_id, 16)
        other._parents = {}
        other._owner = False
        return other

    def _context(self, key: str) -> SpanContext:
        """The span context of a parent: many spans have the same (a turn's, a run's),
        so it is hashed once (the cache kept small)."""
        context = self._parents.get(key)
        if context is None:
            if len(self._parents) >= PARENTS:
                self._parents.clear()
            context = SpanContext(self._trace, span_id(self.trace_id, key), False, _SAMPLED)
            self._parents[key] = context
        return context

    def flush(self) -> None:
        """Send what is queued now (blocking: from a worker thread)."""
        self._processor.force_flush()

    def close(self) -> None:
        """Send what is queued and stop (blocking: from a worker thread)."""
        if not self._owner:
            self.flush()
            return
        self._processor.shutdown()  # type: ignore[no-untyped-call]
        if self._metrics is not None:
            self._metrics.close()
