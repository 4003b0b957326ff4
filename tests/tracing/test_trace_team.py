"""The trace of a scripted team (issue 43, "Trace tests"): the demo's team (a plan,
delegation, a question, a compaction, background and foreground shell calls) killed by
SIGKILL mid-task and resumed, exported over OTLP/HTTP to a receiver on 127.0.0.1."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import orjson
import pytest
import trio

from orchestrator.cli.demo import GOAL, VERIFY, run_until_crash
from orchestrator.cli.env import effective_config
from orchestrator.cli.setup import session_settings
from orchestrator.demo import script_path
from orchestrator.session.live import create_session
from orchestrator.state.events import NullSink
from orchestrator.state.manifest import read_manifest
from orchestrator.store import Durability, session_dir
from orchestrator.tracing import span_id
from tests.scenes import orchestrator
from tests.tracing.receiver import attributes, receiver

ECHO = 'echo "traceparent=$TRACEPARENT"; '
TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
ATTRIBUTE = {
    "input_tokens": "gen_ai.usage.input_tokens",
    "output_tokens": "gen_ai.usage.output_tokens",
    "cache_read_tokens": "gen_ai.usage.cache_read.input_tokens",
    "cache_write_tokens": "gen_ai.usage.cache_creation.input_tokens",
}


def _script(directory: Path) -> Path:
    """The demo's script, its wordstats worker's shell call printing `$TRACEPARENT`."""
    raw = orjson.loads(script_path().read_bytes())
    for reply in raw["agents"]["t4"]:
        for call in reply.get("tool_calls", []):
            if call["name"] == "shell":
                call["arguments"]["command"] = ECHO + call["arguments"]["command"]
    path = directory / "script.json"
    path.write_bytes(orjson.dumps(raw))
    return path


def _session(root: Path, workspace: Path, script: Path) -> str:
    """A session made as `orchestrator demo` makes it (its plan approved, its check)."""
    args = argparse.Namespace(
        yes=True, plan=True, approve=True, verify=[VERIFY], allow=[], json=True, plain=True,
        fps=None, max_rounds=20, model=None, durability=Durability.BATCH.value, config=None,
        sessions_dir=str(root),
    )  # fmt: skip
    config, _ = effective_config(args, os.environ, workspace)
    session_id, _ = create_session(
        root,
        goal=GOAL,
        model=f"scripted:{script}",
        workspace=workspace,
        settings=session_settings(config, args),
        source="demo",
    )
    return session_id


def test_one_trace_across_a_kill_and_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, workspace = tmp_path / "sessions", tmp_path / "ws"
    workspace.mkdir()
    with receiver() as (url, received):
        config = tmp_path / "config.toml"
        config.write_text(
            f'[telemetry]\nenabled = true\nendpoint = "{url}"\n\n'
            '[prices."scripted:script.json"]\ninput = 2.5\noutput = 10.0\n'
        )
        monkeypatch.setenv("ORCHESTRATOR_CONFIG", str(config))
        monkeypatch.setenv("ORCHESTRATOR_CONFIG_DIR", str(tmp_path / "config"))
        monkeypatch.setenv("OTEL_SERVICE_NAME", "orchestrator-test")
        session_id = _session(root, workspace, _script(tmp_path))
        # The first run in a child process, SIGKILLed when t1's shell call starts.
        killed = trio.run(
            lambda: run_until_crash(root, session_id, NullSink(), json_mode=True, say=print)
        )
        assert killed
        left_by_kill = list(received.spans)
        resumed = orchestrator("resume", session_id, "--yes", "--sessions-dir", str(root))
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        shown = orchestrator("sessions", "show", session_id, "--json", "--sessions-dir", str(root))
        assert shown.returncode == 0, shown.stderr
        info = json.loads(shown.stdout)
    spans = received.spans
    # The kill lost what the killed run had not sent: its spans come from the resume.
    assert len(spans) > len(left_by_kill)
    trace_id = read_manifest(session_dir(root, session_id)).trace_id
    assert isinstance(trace_id, str)
    assert {span.trace_id.hex() for span in spans} == {trace_id}
    # At least once: a span the killed run ended may come again from the resume, never
    # a span of a run that ended.
    ids = [span.span_id for span in spans]
    again = {span.span_id for span in left_by_kill} & {
        s.span_id for s in spans[len(left_by_kill) :]
    }
    twice = sorted({s.name for s in spans if ids.count(s.span_id) > 1})
    assert (len(ids) - len(set(ids)), twice) == (len(again), sorted(again))
    roots = [span for span in spans if not span.parent_span_id]
    assert [span.name for span in roots] == ["session"]
    orphans = [s.name for s in spans if s.parent_span_id and s.parent_span_id not in set(ids)]
    assert orphans == []
    assert received.services == {"orchestrator-test"}

    # What the kill left open, ended by the resume as interrupted: the first run, the
    # shell call it cut (whose command the resume did not run again), t1's turn and task.
    interrupted = {span.name for span in spans if attributes(span).get("orchestrator.interrupted")}
    assert {"session", "execute_tool shell", "invoke_agent worker", "task worker"} <= interrupted
    assert [span.name for span in spans if span.name.startswith("session")] == [
        "session",
        "session resumed",
    ]

    # Every model call, compaction summaries included: the session's usage and cost.
    usage = dict.fromkeys(TOKENS, 0)
    cost = 0.0
    for span in spans:
        values = attributes(span)
        if "gen_ai.usage.input_tokens" in values:
            for name in TOKENS:
                usage[name] += values[ATTRIBUTE[name]]
            cost += values["orchestrator.cost_usd"]
    session = info["usage"]["session"]
    assert usage == session["usage"]
    assert cost == pytest.approx(session["cost_usd"], rel=1e-12)
    priced = [s for s in spans if "gen_ai.usage.input_tokens" in attributes(s)]
    assert len(priced) == session["calls"]
    assert received.by_name("compaction")

    # Each task under the call that delegated it; the shell call's TRACEPARENT its own.
    by_id = {span.span_id: span for span in spans}
    for task in received.by_name("task "):
        parent = by_id[task.parent_span_id]
        assert attributes(parent)["gen_ai.tool.name"] in ("delegate", "shell")
    (echo,) = [
        span
        for span in received.by_name("execute_tool shell")
        if attributes(span).get("gen_ai.agent.id") == "t4"
    ]
    ref = attributes(echo)["orchestrator.call.ref"]
    assert echo.span_id == span_id(trace_id, f"call:{ref}").to_bytes(8, "big")
    journal = (session_dir(root, session_id) / "journal.jsonl").read_text()
    assert f"traceparent=00-{trace_id}-{echo.span_id.hex()}-01" in journal
    names = {metric.name for metric in received.metrics}
    assert {"gen_ai.client.token.usage", "orchestrator.cost", "orchestrator.tool.duration"} <= names
