"""A server's question asked at the terminal: `orchestrator run` on a pseudo-terminal
(tests/cli/terminal.py), its config's server (server_app.py) asking the person during
the main agent's call; the person types the answer, and the server gets it."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.cli.terminal import Terminal
from tests.mcp.conftest import APP
from tests.scenes import call


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ask-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_servers_question_is_asked_at_the_terminal_and_its_answer_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "config.toml").write_text(
        f'[mcp.servers.docs]\ncommand = "{sys.executable}"\nargs = ["{APP}", "stdio"]\n'
    )
    monkeypatch.setenv("ORCHESTRATOR_CONFIG_DIR", str(user))
    script = tmp_path / "script.json"
    main = [
        {"tool_calls": [call("docs__ask", question="Which colour?")]},
        {"text": "Asked."},
    ]
    script.write_bytes(orjson.dumps({"agents": {"main": main}}))
    (tmp_path / "ws").mkdir()
    terminal = Terminal(
        ["run", "ask", "-m", f"scripted:{script}", "-w", str(tmp_path / "ws"), "--yes",
         "--sandbox", "off", "--sessions-dir", str(tmp_path / "s")],
        cols=120,
        rows=40,
    )  # fmt: skip
    try:
        asked = terminal.wait_for(rb"Answer with choice \(string\); an empty line declines: ")
        assert b"MCP server docs asks (during the main agent's call of ask)" in terminal.raw
        assert b"Which colour?" in terminal.raw
        terminal.type(b'{"colour": 1}\n')  # not its form: asked again
        again = terminal.wait_for(
            rb"no such field: colour \(fields: choice\); answer again", after=asked
        )
        terminal.wait_for(rb"an empty line declines: ", after=again)
        terminal.type(b"teal\n")
        assert terminal.finish() == 0, terminal.text()
    finally:
        terminal.close()
    [journal] = (tmp_path / "s").glob("*/journal.jsonl")
    lines = [orjson.loads(line) for line in journal.read_bytes().splitlines()]
    [answered] = [r for r in lines if r["k"] == "mcp_elicit_answered"]
    assert (answered["content"], answered.get("by", "person")) == ({"choice": "teal"}, "person")
    results = [r for r in lines if r["k"] == "call_result"]
    assert any("accept: teal" in orjson.dumps(r).decode() for r in results)
