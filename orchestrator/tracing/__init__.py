"""OpenTelemetry traces and metrics of a session (docs/tracing.md): an event sink that
`cli/` and `host/` attach; OpenTelemetry's SDK is imported only when a run is traced."""

from orchestrator.tracing.ended import SEMCONV, Ended, span_id, traceparent
from orchestrator.tracing.run import TraceSink, Tracing, traced
from orchestrator.tracing.settings import Telemetry, telemetry_from
from orchestrator.tracing.spans import Spans

__all__ = [
    "SEMCONV",
    "Ended",
    "Spans",
    "Telemetry",
    "TraceSink",
    "Tracing",
    "span_id",
    "telemetry_from",
    "traced",
    "traceparent",
]
