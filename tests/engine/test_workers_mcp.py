"""MCP servers on workers: a task's team on `orchestrator worker` opens the servers of the
worker's own config itself (as its models and keys are the worker's), so a task of a
type that names a server's tools calls them there; their definitions are pinned in the
task's own journal. A real worker process, a real MCP server (tests/mcp/server_app.py),
SQLite."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

pytest.importorskip("dbos")
pytest.importorskip("mcp")

from orchestrator import (
    AgentDefinition,
    Definitions,
    ListSink,
    RunResult,
    RunSettings,
    ScriptedModel,
    drive,
    open_session,
)
from orchestrator.engine import dbos_workers
from orchestrator.engine.store import Store
from orchestrator.models.scripted import parse_script
from orchestrator.tools import PermissionPolicy, approve_all, workspace_tools
from tests.engine.test_workers import Setup, main_script
from tests.engine.workers import start_worker
from tests.mcp.conftest import APP
from tests.scenes import call

# The session's type of the name (its own tools: it has no server); the worker's names
# the server's tool, which the worker's config gives.
RESEARCHER = {"name": "researcher", "prompt": "Find out.", "tools": ["read_file"]}

SEARCHING: dict[str, Any] = {
    "agents": {
        "main": main_script(
            call("delegate", description="look", prompt="search for x", agent_type="researcher")
        ),
        "t1": [
            {"tool_calls": [call("docs__search", query="x")]},
            {"tool_calls": [call("complete", summary="searched")]},
        ],
    }
}


async def test_a_task_on_a_worker_calls_the_mcp_server_of_the_workers_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup = Setup(tmp_path, SEARCHING)
    # The worker's own config: its server, and its agent type that names the server's tool.
    (tmp_path / "worker.toml").write_text(
        f"[mcp.servers.docs]\ncommand = {sys.executable!r}\n"
        f"args = [{str(APP)!r}, 'stdio', '--name', 'docs']\n"
    )
    user = tmp_path / "user"
    (user / "agents").mkdir(parents=True)
    (user / "agents" / "researcher.toml").write_text(
        'name = "researcher"\nprompt = "Find out."\ntools = ["mcp:docs/search"]\n'
    )
    monkeypatch.setenv("ORCHESTRATOR_CONFIG_DIR", str(user))
    # The session knows a type of that name (to delegate to it); its task runs on the
    # worker, as the worker's type.
    researcher = AgentDefinition(**RESEARCHER)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        worker = await start_worker(nursery, setup.url, tmp_path)
        with trio.fail_after(120):
            result = await run_with(setup, Definitions([*Definitions.builtin(), researcher]))
        await worker.stop()
    assert result.status == "completed", (result, worker.lines)
    store = Store(setup.url)
    records = [orjson.loads(line) for _, line in store.records(f"{setup.session_id}/t1")]
    store.close()
    results = [r["content"] for r in records if r["k"] == "call_result"]
    assert results[0] == "docs found: x", results
    [pin] = [r for r in records if r["k"] == "mcp_pinned"]  # in the task's own journal
    assert pin["server"] == "docs"
    assert any("task t1: call docs__search" in line for line in worker.lines)


async def run_with(setup: Setup, definitions: Definitions) -> RunResult:
    """`setup`'s session run to its end with these agent types, its tasks on workers."""
    settings = RunSettings(
        model=ScriptedModel(parse_script(setup.script)),
        tools=workspace_tools(),
        ui=ListSink(),
        policy=PermissionPolicy(),
        approve=approve_all,
        definitions=definitions,
        runner=dbos_workers(
            setup.url, model=f"scripted:{setup.script_file}", workspace=setup.workspace
        ),
    )
    async with open_session(setup.root, setup.session_id, warn=lambda _: None) as live:
        return await drive(live, settings)
