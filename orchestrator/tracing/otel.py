"""OpenTelemetry's SDK side of tracing: each ended span (tracing/spans.py) made and ended
as one SDK span with the id its key gives, under its parent's id; and the metrics of the
spans this process saw end. Imported only when a run is traced (the `otel` extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode

from orchestrator._version import __version__
from orchestrator.tracing.spans import SEMCONV, Ended, span_id

if TYPE_CHECKING:
    from orchestrator.tracing.settings import Telemetry

NS = 1e9
_SAMPLED = trace.TraceFlags(trace.TraceFlags.SAMPLED)
_KINDS = {"chat": SpanKind.CLIENT}


class _Given(IdGenerator):
    """Ids chosen by the caller: the trace's, and the span's set just before it starts."""

    def __init__(self, trace_id: int) -> None:
        self.trace_id = trace_id
        self.next_span = 0

    def generate_span_id(self) -> int:
        return self.next_span

    def generate_trace_id(self) -> int:
        return self.trace_id


class Exporter:
    """The SDK's tracer (and meter) of one traced run, to OTLP/HTTP unless given an
    exporter and a metric reader (tests, the overhead bench)."""

    def __init__(
        self,
        trace_id: str,
        telemetry: Telemetry,
        *,
        span_exporter: SpanExporter | None = None,
        metric_reader: MetricReader | None = None,
    ) -> None:
        self.trace_id = trace_id
        self._ids = _Given(int(trace_id, 16))
        resource = Resource.create({"service.name": telemetry.service})
        self._provider = TracerProvider(
            resource=resource, id_generator=self._ids, shutdown_on_exit=False
        )
        base = telemetry.endpoint
        exporter = span_exporter or OTLPSpanExporter(endpoint=f"{base}/v1/traces" if base else None)
        self._provider.add_span_processor(BatchSpanProcessor(exporter))
        schema = f"https://opentelemetry.io/schemas/{SEMCONV}"
        self._tracer = self._provider.get_tracer("orchestrator", __version__, schema_url=schema)
        self._meters: MeterProvider | None = None
        if telemetry.metrics:
            reader = metric_reader or PeriodicExportingMetricReader(
                OTLPMetricExporter(endpoint=f"{base}/v1/metrics" if base else None)
            )
            self._meters = MeterProvider(
                metric_readers=[reader], resource=resource, shutdown_on_exit=False
            )
            meter = self._meters.get_meter("orchestrator", __version__, schema_url=schema)
            self._tokens = meter.create_histogram(
                "gen_ai.client.token.usage", unit="{token}", description="tokens of a model call"
            )
            self._duration = meter.create_histogram(
                "gen_ai.client.operation.duration", unit="s", description="a model call's time"
            )
            self._cost = meter.create_counter(
                "orchestrator.cost", unit="USD", description="what the model calls cost"
            )
            self._tool = meter.create_histogram(
                "orchestrator.tool.duration", unit="s", description="a tool call's time"
            )

    def export(self, ended: Ended, *, measure: bool = True) -> None:
        """Make and end the SDK span of `ended`; count it in the metrics if `measure`."""
        self._ids.next_span = span_id(self.trace_id, ended.key)
        context = Context()
        if ended.parent is not None:
            parent = SpanContext(
                self._ids.trace_id,
                span_id(self.trace_id, ended.parent),
                is_remote=False,
                trace_flags=_SAMPLED,
            )
            context = trace.set_span_in_context(NonRecordingSpan(parent), context)
        span = self._tracer.start_span(
            ended.name,
            context,
            kind=_KINDS.get(ended.kind, SpanKind.INTERNAL),
            attributes=ended.attributes,
            start_time=ended.start,
        )
        if ended.error:
            span.set_status(Status(StatusCode.ERROR, ended.error))
        span.end(ended.end)
        if measure and self._meters is not None:
            self._measure(ended)

    def _measure(self, ended: Ended) -> None:
        attributes = ended.attributes
        if ended.kind == "chat":
            by = {
                "gen_ai.operation.name": "chat",
                "gen_ai.agent.name": attributes.get("gen_ai.agent.name", ""),
                "gen_ai.request.model": attributes.get("gen_ai.request.model", ""),
                "gen_ai.provider.name": attributes.get("gen_ai.provider.name", ""),
            }
            for kind, name in (("input", "input_tokens"), ("output", "output_tokens")):
                tokens = attributes.get(f"gen_ai.usage.{name}")
                if isinstance(tokens, int):
                    self._tokens.record(tokens, {**by, "gen_ai.token.type": kind})
            self._duration.record((ended.end - ended.start) / NS, by)
            cost = attributes.get("orchestrator.cost_usd")
            if isinstance(cost, float | int):
                self._cost.add(cost, by)
        elif ended.kind == "call":
            by = {
                "gen_ai.tool.name": attributes.get("gen_ai.tool.name", ""),
                "gen_ai.agent.name": attributes.get("gen_ai.agent.name", ""),
                "orchestrator.call.status": attributes.get("orchestrator.call.status", ""),
            }
            self._tool.record((ended.end - ended.start) / NS, by)

    def flush(self) -> None:
        """Send what is queued now (blocking: from a worker thread)."""
        self._provider.force_flush()

    def close(self) -> None:
        """Send what is queued and stop (blocking: from a worker thread)."""
        self._provider.shutdown()
        if self._meters is not None:
            self._meters.shutdown()
