"""Trace context in MCP requests (issue 43, item 4): a traced run's call of an MCP
server's tool carries the call's span as W3C `traceparent` in `params._meta` (the MCP
spec's SEP-414), so the server's spans join the session's trace under that call; an
untraced run's carries none."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from orchestrator.state.manifest import read_manifest
from orchestrator.tracing import span_id
from tests.scenes import orchestrator
from tests.tracing.receiver import attributes, receiver

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")

APP = Path(__file__).with_name("mcp_app.py")
SCRIPT = {
    "version": 1,
    "agents": {
        "main": [
            {"text": "Asking.", "tool_calls": [{"name": "probe__traceparent", "arguments": {}}]},
            {"text": "Done."},
        ]
    },
}


def _run(tmp_path: Path, telemetry: str) -> tuple[Path, str]:
    """One run of the script with the probe server; its session's directory and the
    tool's answer, as journaled."""
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(SCRIPT))
    config = tmp_path / "config.toml"
    config.write_text(
        f'{telemetry}[mcp.servers.probe]\ncommand = "{sys.executable}"\nargs = ["{APP}"]\n'
    )
    root = tmp_path / "sessions"
    ran = orchestrator(
        "run", "probe", "--model", f"scripted:{script}", "-w", str(tmp_path / "ws"), "--yes",
        "--sessions-dir", str(root),
        ORCHESTRATOR_CONFIG=str(config), ORCHESTRATOR_CONFIG_DIR=str(tmp_path / "user"),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (directory,) = [path for path in root.iterdir() if path.is_dir()]
    answers = [
        line["content"]
        for line in map(orjson.loads, (directory / "journal.jsonl").read_bytes().splitlines())
        if line.get("k") == "call_result"
    ]
    (answer,) = answers
    return directory, answer


def test_an_mcp_call_carries_its_span_as_traceparent(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    with receiver() as (url, received):
        directory, answer = _run(tmp_path, f'[telemetry]\nenabled = true\nendpoint = "{url}"\n\n')
    trace_id = read_manifest(directory).trace_id
    assert isinstance(trace_id, str)
    (call,) = received.by_name("execute_tool probe__traceparent")
    ref = attributes(call)["orchestrator.call.ref"]
    assert call.span_id == span_id(trace_id, f"call:{ref}").to_bytes(8, "big")
    assert answer == f"traceparent=00-{trace_id}-{call.span_id.hex()}-01"


def test_an_untraced_run_sends_no_traceparent(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    assert _run(tmp_path, "")[1] == "traceparent=none"
