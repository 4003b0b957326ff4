"""The trace of a session whose task runs on a worker (issue 43, "the same with a task on
a worker"): the session, traced, puts its task on the queue with the delegating call's
`traceparent` in the task's workflow input; the worker, traced by its own config, exports
the task's turns, model calls and tool calls under the task's span, into the session's
trace. Both export over OTLP/HTTP to one receiver on 127.0.0.1."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

pytest.importorskip("dbos")

from orchestrator.engine import sqlite_url
from orchestrator.state.manifest import read_manifest
from orchestrator.tracing import span_id
from tests.engine.workers import start_worker
from tests.scenes import call
from tests.tracing.receiver import attributes, receiver

SCRIPT: dict[str, Any] = {
    "version": 1,
    "agents": {
        "main": [
            {
                "tool_calls": [
                    call("delegate", description="a", prompt="a", write_scope=["a.txt", "tp.txt"])
                ]
            },
            *[{"tool_calls": [call("wait_tasks")]} for _ in range(3)],
            *[{"text": f"done ({n})"} for n in range(4)],
        ],
        "t1": [
            {"text": "writing a", "tool_calls": [call("write_file", path="a.txt", content="A")]},
            {"tool_calls": [call("shell", command='printf %s "$TRACEPARENT" > tp.txt')]},
            {"tool_calls": [call("complete", summary="wrote a")]},
        ],
    },
}
TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
PRICES = '[prices."scripted:script.json"]\ninput = 2.5\noutput = 10.0\n'


async def _orchestrator(*args: str, **env: str) -> trio.CompletedProcess[bytes]:
    return await trio.run_process(
        [sys.executable, "-m", "orchestrator", *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        stdin=b"",
        env={**os.environ, "NO_COLOR": "1", **env},
    )


async def test_a_task_on_a_worker_joins_its_session_s_trace(tmp_path: Path) -> None:
    root, workspace = tmp_path / "sessions", tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(SCRIPT))
    url = sqlite_url(tmp_path / "engine.sqlite")
    with receiver() as (endpoint, received):
        telemetry = f'[telemetry]\nenabled = true\nendpoint = "{endpoint}"\n\n{PRICES}'
        config = tmp_path / "config.toml"
        config.write_text(telemetry)
        (tmp_path / "worker.toml").write_text(telemetry)  # (the worker's own config)
        async with trio.open_nursery() as nursery:
            worker = await start_worker(nursery, url, tmp_path)
            with trio.fail_after(120):
                ran = await _orchestrator(
                    "run", "write a", "--model", f"scripted:{script}", "-w", str(workspace),
                    "--yes", "--engine", "dbos", "--workers", "--database-url", url,
                    "--sessions-dir", str(root),
                    ORCHESTRATOR_CONFIG=str(config),
                    ORCHESTRATOR_CONFIG_DIR=str(tmp_path / "user"),
                )  # fmt: skip
                await worker.see("task t1: completed")
            await worker.stop()  # (its exporter sends what it holds)
        assert ran.returncode == 0, ran.stdout.decode() + ran.stderr.decode()
        (directory,) = [path for path in root.iterdir() if path.is_dir()]
        shown = await _orchestrator(
            "sessions", "show", directory.name, "--json", "--sessions-dir", str(root),
            "--database-url", url, ORCHESTRATOR_CONFIG=str(config),
        )  # fmt: skip
        assert shown.returncode == 0, shown.stderr.decode()
    trace_id = read_manifest(directory).trace_id
    assert isinstance(trace_id, str)
    spans = received.spans
    assert {span.trace_id.hex() for span in spans} == {trace_id}
    ids = [span.span_id for span in spans]
    assert len(ids) == len(set(ids))  # the session did not trace the worker's work again
    orphans = [s.name for s in spans if s.parent_span_id and s.parent_span_id not in set(ids)]
    assert orphans == []

    # The task's turn, model calls and tool calls, from the worker, under its task span.
    by_id = {span.span_id: span for span in spans}
    (task,) = received.by_name("task ")
    assert task.span_id == span_id(trace_id, "task:t1").to_bytes(8, "big")
    assert attributes(by_id[task.parent_span_id])["gen_ai.tool.name"] == "delegate"
    (turn,) = [
        s for s in spans if attributes(s).get("gen_ai.agent.id") == "t1" and "invoke" in s.name
    ]
    assert turn.parent_span_id == task.span_id
    of_t1 = [s for s in spans if s.parent_span_id == turn.span_id]
    assert sorted(s.name for s in of_t1) == [
        "chat script.json",
        "chat script.json",
        "chat script.json",
        "execute_tool complete",
        "execute_tool shell",
        "execute_tool write_file",
    ]
    for span in of_t1:
        if span.name.startswith("execute_tool"):
            ref = attributes(span)["orchestrator.call.ref"]
            assert span.span_id == span_id(trace_id, f"call:t1/{ref}").to_bytes(8, "big")
    # The task's shell command was given its call's span as TRACEPARENT, on the worker too.
    (shell,) = [s for s in of_t1 if s.name == "execute_tool shell"]
    given = (workspace / "tp.txt").read_text()
    assert given == f"00-{trace_id}-{shell.span_id.hex()}-01"

    # Every model call's tokens and cost, the worker's too: the session's figures.
    usage = json.loads(shown.stdout)["usage"]["session"]
    chats = [attributes(s) for s in spans if s.name.startswith("chat ")]
    assert len(chats) == usage["calls"]
    assert sum(c["gen_ai.usage.input_tokens"] for c in chats) == usage["usage"]["input_tokens"]
    assert sum(c["gen_ai.usage.output_tokens"] for c in chats) == usage["usage"]["output_tokens"]
    assert sum(c["orchestrator.cost_usd"] for c in chats) == pytest.approx(usage["cost_usd"])


async def test_a_worker_traced_without_the_sdk_stops_before_it_takes_a_task(
    tmp_path: Path,
) -> None:
    (tmp_path / "worker.toml").write_text("[telemetry]\nenabled = true\n")
    hide = "import sys; sys.modules['opentelemetry.sdk.trace'] = None"  # (as if not installed)
    async with trio.open_nursery() as nursery:
        worker = await start_worker(
            nursery, sqlite_url(tmp_path / "engine.sqlite"), tmp_path, before=hide
        )
        with trio.fail_after(60):
            line = await worker.see("tracing needs OpenTelemetry's SDK")
            await worker.process.wait()
    assert "pip install 'orchestrator[otel]'" in line
    assert worker.process.returncode == 2
