"""With tracing off, neither OpenTelemetry's SDK nor an exporter is imported, and which
settings turn it on (issue 43, item 5)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.config import TelemetryConfig
from orchestrator.errors import ConfigError
from orchestrator.tracing import Telemetry, telemetry_from, traceparent


def test_a_run_without_telemetry_imports_no_sdk(tmp_path: Path) -> None:
    script = Path(__file__).parents[2] / "examples" / "hello-script.json"
    code = (
        "import sys, runpy\n"
        "sys.argv = ['orchestrator', 'run', 'hello', '--model', 'scripted:' + sys.argv[1],"
        " '-w', sys.argv[2], '--yes', '--sessions-dir', sys.argv[3]]\n"
        "try:\n    runpy.run_module('orchestrator', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')"
        " or 'exporter' in m))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ORCHESTRATOR_PLAIN": "1"}
    ran = subprocess.run(
        [sys.executable, "-c", code, str(script), str(tmp_path / "ws"), str(tmp_path / "s")],
        capture_output=True, text=True, env=env, check=True, timeout=60,
    )  # fmt: skip
    assert ran.stdout.splitlines()[-1] == "[]", ran.stdout + ran.stderr
    assert "orchestrator.tracing.otel" not in ran.stdout


@pytest.mark.parametrize(
    ("enabled", "environ", "on"),
    [
        (False, {}, False),
        (True, {}, True),
        (False, {"OTEL_TRACES_EXPORTER": "otlp"}, True),
        (True, {"OTEL_SDK_DISABLED": "true"}, False),
        (True, {"OTEL_TRACES_EXPORTER": "none"}, False),
    ],
)
def test_what_turns_tracing_on(enabled: bool, environ: dict[str, str], on: bool) -> None:
    telemetry = telemetry_from(TelemetryConfig(enabled=enabled), environ)
    assert (telemetry is not None) == on


def test_the_standard_variables_are_read() -> None:
    environ = {
        "OTEL_SERVICE_NAME": "mine",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        "OTEL_METRIC_EXPORT_INTERVAL": "15000",
    }
    config = TelemetryConfig(enabled=True, endpoint="http://127.0.0.1:4318/")
    assert telemetry_from(config, environ) == Telemetry(
        endpoint="http://127.0.0.1:4318", capture_content=True, service="mine", metric_interval=15
    )
    assert telemetry_from(config, {}) == Telemetry(endpoint="http://127.0.0.1:4318")
    with pytest.raises(ConfigError, match="grpc"):
        telemetry_from(config, {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    for wrong in ("0", "soon"):
        with pytest.raises(ConfigError, match="OTEL_METRIC_EXPORT_INTERVAL"):
            telemetry_from(config, {"OTEL_METRIC_EXPORT_INTERVAL": wrong})


def test_a_traceparent_is_w3c() -> None:
    header = traceparent("ab" * 16, "call:3.0")
    version, trace, span, flags = header.split("-")
    assert (version, trace, flags, len(span)) == ("00", "ab" * 16, "01", 16)
    assert header != traceparent("ab" * 16, "call:3.1")
