"""An OTLP/HTTP receiver on 127.0.0.1 for the tests: it decodes what an exporter posts
to `/v1/traces` and `/v1/metrics` (protobuf) and keeps the spans and metric names."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


@dataclass
class Received:
    spans: list[Any] = field(default_factory=list)  # opentelemetry.proto.trace.v1.Span
    metrics: list[Any] = field(default_factory=list)  # opentelemetry.proto.metrics.v1.Metric
    services: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def by_name(self, prefix: str) -> list[Any]:
        return [span for span in self.spans if span.name.startswith(prefix)]


def attributes(span: Any) -> dict[str, Any]:
    """A decoded span's attributes as plain values."""
    values: dict[str, Any] = {}
    for item in span.attributes:
        value = item.value
        kind = value.WhichOneof("value")
        if kind == "array_value":
            values[item.key] = tuple(v.string_value for v in value.array_value.values)
        else:
            values[item.key] = getattr(value, kind)
    return values


@contextmanager
def receiver() -> Iterator[tuple[str, Received]]:
    """A receiver running while the block runs: its base URL and what it received."""
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with received.lock:
                if self.path == "/v1/traces":
                    request = ExportTraceServiceRequest.FromString(body)
                    for resource in request.resource_spans:
                        for attribute in resource.resource.attributes:
                            if attribute.key == "service.name":
                                received.services.add(attribute.value.string_value)
                        for scope in resource.scope_spans:
                            received.spans.extend(scope.spans)
                elif self.path == "/v1/metrics":
                    metrics = ExportMetricsServiceRequest.FromString(body)
                    for resource in metrics.resource_metrics:
                        for scope in resource.scope_metrics:
                            received.metrics.extend(scope.metrics)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
