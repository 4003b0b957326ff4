"""OpenTelemetry's SDK side of tracing: each ended span (tracing/spans.py) handed to the
SDK's batch exporter as one span with the id its key gives, under its parent's id; and
the metrics of the spans this process saw end. Imported only when a run is traced (the
`otel` extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

from orchestrator._version import __version__
from orchestrator.tracing.spans import SEMCONV, Ended, span_id

if TYPE_CHECKING:
    from orchestrator.tracing.settings import Telemetry

NS = 1e9
_SAMPLED = trace.TraceFlags(trace.TraceFlags.SAMPLED)
_KINDS = {"chat": SpanKind.CLIENT}
_UNSET = Status(StatusCode.UNSET)


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
        self._trace = int(trace_id, 16)
        resource = self._resource = Resource.create({"service.name": telemetry.service})
        base = telemetry.endpoint
        exporter = span_exporter or OTLPSpanExporter(endpoint=f"{base}/v1/traces" if base else None)
        # Our spans have ended when they are made (derived from the journal's events, with
        # their own ids and times): each goes to the batch processor as a `ReadableSpan`,
        # without the tracer's live-span machinery, which costs several times as much.
        self._processor = BatchSpanProcessor(exporter)
        schema = f"https://opentelemetry.io/schemas/{SEMCONV}"
        self._scope = InstrumentationScope("orchestrator", __version__, schema_url=schema)
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
        """Hand the SDK's span of `ended` to the exporter; count it in the metrics if
        `measure`."""
        parent = None
        if ended.parent is not None:
            parent = SpanContext(self._trace, span_id(self.trace_id, ended.parent), False, _SAMPLED)
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
        self._processor.force_flush()

    def close(self) -> None:
        """Send what is queued and stop (blocking: from a worker thread)."""
        self._processor.shutdown()  # type: ignore[no-untyped-call]
        if self._meters is not None:
            self._meters.shutdown()
