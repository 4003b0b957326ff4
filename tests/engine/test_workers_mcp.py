"""MCP servers on workers: a task's team on `orchestrator worker` opens the servers of the
worker's own config itself (as its models and keys are the worker's), so a task of a
type that names a server's tools calls them there; their definitions are pinned in the
task's own journal; a server's question there, which nobody can answer, is told to the
task's call as such. A real worker process, a real MCP server (tests/mcp/server_app.py),
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


def one_call(made: dict[str, Any]) -> dict[str, Any]:
    """A script: the main agent delegates t1 to the researcher type; t1 makes the call
    `made`, then completes."""
    delegate = call("delegate", description="do", prompt="do it", agent_type="researcher")
    t1 = [{"tool_calls": [made]}, {"tool_calls": [call("complete", summary="done")]}]
    return {"agents": {"main": main_script(delegate), "t1": t1}}


SEARCHING = one_call(call("docs__search", query="x"))
ASKING = one_call(call("docs__ask", question="Your colour?"))


async def test_a_task_on_a_worker_calls_the_mcp_server_of_the_workers_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records, said = await on_a_worker(tmp_path, monkeypatch, SEARCHING, "mcp:docs/search")
    results = [r["content"] for r in records if r["k"] == "call_result"]
    assert results[0] == "docs found: x", results
    [pin] = [r for r in records if r["k"] == "mcp_pinned"]  # in the task's own journal
    assert pin["server"] == "docs"
    assert any("task t1: call docs__search" in line for line in said)


async def on_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: dict[str, Any], tools: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """A session of `script` run to its completion, its task t1 on a worker whose config
    gives the `docs` server and the researcher type of `tools`: t1's records, and what the
    worker said."""
    setup = Setup(tmp_path, script)
    # The worker's own config: its server, and its agent type that names the server's tool.
    (tmp_path / "worker.toml").write_text(
        f"[mcp.servers.docs]\ncommand = {sys.executable!r}\n"
        f"args = [{str(APP)!r}, 'stdio', '--name', 'docs']\n"
    )
    user = tmp_path / "user"
    (user / "agents").mkdir(parents=True)
    (user / "agents" / "researcher.toml").write_text(
        f'name = "researcher"\nprompt = "Find out."\ntools = ["{tools}"]\n'
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
    return records, worker.lines


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


async def test_a_servers_question_on_a_worker_is_told_to_the_task_as_unanswerable_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker has nobody to ask, and the session does not see its task's question: the
    # task's call says so (not that the session stops blocked on it), and the task goes
    # on: the session completes.
    records, _ = await on_a_worker(tmp_path, monkeypatch, ASKING, "mcp:docs/ask")
    told = [r["content"] for r in records if r["k"] == "call_result"]
    assert told[0] == (
        "MCP server 'docs' asked the person during ask ('Your colour?'), and nobody can "
        "answer it on a worker, where no person is asked: ask for what the server wanted "
        "(ask_decision), or go on without it"
    )
