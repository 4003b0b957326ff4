"""An MCP call is a tool call like any other across a crash: the session SIGKILLed while
the call runs, then resumed, reports a call the server did not mark idempotent as
`interrupted` (it may or may not have taken effect), and runs again one it marked
idempotent. And no server outlives a SIGKILLed session, nor what it started."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.mcp.conftest import APP
from tests.scenes import alive, killed_when, wait_until
from tests.scenes import orchestrator as command


def progress_of(tool: str) -> Any:
    def when(event: dict[str, Any]) -> bool:
        return event.get("kind") == "tool_progress" and event.get("tool") == tool

    return when


@pytest.mark.parametrize(
    ("call", "status", "content"),
    [
        ({"name": "docs__slow", "arguments": {"seconds": 600}}, "interrupted", ""),
        ({"name": "docs__hold", "arguments": {"path": "MARK"}}, "ok", "held again"),
    ],
)
def test_a_call_cut_by_a_kill_is_interrupted_unless_the_server_marked_it_idempotent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: dict[str, Any], status: str, content: str
) -> None:
    user = tmp_path / "user"
    user.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    if "path" in call["arguments"]:
        call["arguments"]["path"] = str(tmp_path / "held")
    (user / "config.toml").write_text(
        f'[mcp.servers.docs]\ncommand = "{sys.executable}"\nargs = ["{APP}", "stdio"]\n'
    )
    script = tmp_path / "script.json"
    replies = [{"tool_calls": [call]}, {"text": "done"}]
    script.write_text(orjson.dumps({"version": 1, "agents": {"main": replies}}).decode())
    monkeypatch.setenv("ORCHESTRATOR_CONFIG_DIR", str(user))
    monkeypatch.setenv("ORCHESTRATOR_SESSIONS_DIR", str(tmp_path / "s"))
    argv = ["run", "go", "--model", f"scripted:{script}", "-w", str(work), "--json", "--yes"]
    killed_when(argv, progress_of(call["name"]))
    (session,) = (tmp_path / "s").iterdir()
    done = command("resume", session.name, "--yes")
    assert done.returncode == 0, done.stderr
    journal = [orjson.loads(line) for line in (session / "journal.jsonl").read_text().splitlines()]
    (result,) = [record for record in journal if record["k"] == "call_result"]
    assert result.get("status", "ok") == status, result
    if content:
        assert result["content"] == content


def test_no_server_nor_what_it_started_outlives_a_sigkilled_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user"
    user.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    # A server that would live on: its stdin closing does not end it, nor SIGTERM, and
    # the helper it starts ignores SIGTERM too.
    (user / "config.toml").write_text(
        f'[mcp.servers.docs]\ncommand = "{sys.executable}"\nargs = ["{APP}", "stdio", "--linger"]\n'
    )
    pids = tmp_path / "pids"
    calls = [
        {"name": "docs__spawn", "arguments": {"path": str(pids)}},
        {"name": "docs__slow", "arguments": {"seconds": 600}},
    ]
    replies = [{"tool_calls": [calls[0]]}, {"tool_calls": [calls[1]]}, {"text": "done"}]
    script = tmp_path / "script.json"
    script.write_text(orjson.dumps({"version": 1, "agents": {"main": replies}}).decode())
    monkeypatch.setenv("ORCHESTRATOR_CONFIG_DIR", str(user))
    monkeypatch.setenv("ORCHESTRATOR_SESSIONS_DIR", str(tmp_path / "s"))
    argv = ["run", "go", "--model", f"scripted:{script}", "-w", str(work), "--json", "--yes"]
    killed_when(argv, progress_of("docs__slow"))
    server, helper = map(int, pids.read_text().split())
    assert wait_until(lambda: not alive(server) and not alive(helper)), (server, helper)
