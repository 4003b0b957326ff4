"""Whether a run is traced, and where its spans go: `[telemetry]` and the standard
`OTEL_*` variables (docs/tracing.md). Pure: the caller (`cli/`) hands in the
environment; nothing here imports OpenTelemetry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from orchestrator.errors import ConfigError

if TYPE_CHECKING:
    from orchestrator.config import TelemetryConfig

_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Telemetry:
    """How a traced run exports. `endpoint`: the OTLP/HTTP base URL (`/v1/traces` and
    `/v1/metrics` are added); "" leaves it to the exporter, which reads the
    `OTEL_EXPORTER_OTLP_*` variables (default http://localhost:4318)."""

    endpoint: str = ""
    capture_content: bool = False
    metrics: bool = True
    service: str = "orchestrator"  # the resource's `service.name` (`OTEL_SERVICE_NAME`)
    metric_interval: float = 60.0  # seconds between metric exports (`OTEL_METRIC_EXPORT_INTERVAL`)


def telemetry_from(config: TelemetryConfig, environ: Mapping[str, str]) -> Telemetry | None:
    """The run's telemetry, or None when it is off: on with `[telemetry] enabled` or
    `OTEL_TRACES_EXPORTER=otlp`, off with `OTEL_SDK_DISABLED=true` or
    `OTEL_TRACES_EXPORTER=none` whatever the config says."""
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() in _TRUE or exporter == "none":
        return None
    if not (config.enabled or exporter == "otlp"):
        return None
    if exporter not in ("", "otlp"):
        raise ConfigError(
            f"OTEL_TRACES_EXPORTER={exporter}: orchestrator exports traces over OTLP only "
            "(otlp, or none)"
        )
    protocol = environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "")
    )
    if protocol.strip() not in ("", "http/protobuf"):
        raise ConfigError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: orchestrator exports OTLP over HTTP "
            "with protobuf (http/protobuf) only"
        )
    capture = config.capture_content or (
        environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").lower() in _TRUE
    )
    interval = environ.get("OTEL_METRIC_EXPORT_INTERVAL", "").strip() or "60000"
    try:
        metric_interval = int(interval) / 1000
    except ValueError:
        metric_interval = 0.0
    if metric_interval <= 0:
        raise ConfigError(
            f"OTEL_METRIC_EXPORT_INTERVAL={interval}: the milliseconds between metric exports"
        )
    return Telemetry(
        endpoint=config.endpoint.rstrip("/"),
        capture_content=capture,
        metrics=config.metrics,
        service=environ.get("OTEL_SERVICE_NAME", "").strip() or "orchestrator",
        metric_interval=metric_interval,
    )
