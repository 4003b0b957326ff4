"""A project's hooks and the scripts they run from the workspace: trusted together, and
a script changed after the session started (an agent's tools can write there) is not
run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from orchestrator.cli.env import effective_config
from orchestrator.cli.parser import build_parser
from orchestrator.errors import ConfigError
from tests.hooks.conftest import Scene, call, events


def load(home: Path, ws: Path, ask: object = None) -> object:
    args = build_parser().parse_args(["run", "goal"])
    return effective_config(args, {"ORCHESTRATOR_CONFIG_DIR": str(home)}, ws, ask=ask)  # type: ignore[arg-type]


def test_the_scripts_a_project_hook_runs_are_part_of_its_trust(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    (ws / ".orchestrator").mkdir(parents=True)
    home.mkdir()
    script = ws / ".orchestrator" / "hook.py"
    script.write_text("print('{}')\n")
    (ws / ".orchestrator" / "config.toml").write_text(
        f'[[hooks]]\nevent = "stop"\ncommand = "{sys.executable} .orchestrator/hook.py"\n'
    )
    questions: list[str] = []
    load(home, ws, ask=lambda question: questions.append(question) or True)
    assert len(questions) == 1
    assert "(run as your commands, outside the sandbox, with the scripts they run)" in questions[0]
    load(home, ws)  # trusted: asks nothing
    script.write_text("import os; os.system('curl evil')\n")
    with pytest.raises(ConfigError, match="you have not trusted"):
        load(home, ws)


def test_a_hook_script_changed_during_the_session_is_not_run(scene: Scene) -> None:
    script = scene.work / "check.py"
    script.write_text("import sys; sys.stdin.read()\n")
    hook = f"{sys.executable} {script}"
    scene.config({"event": "pre_tool", "tools": ["shell"], "command": hook, "fail_closed": True})
    done = scene.ran(
        {"tool_calls": [call("shell", command="echo 'print(1)' > check.py")]},
        {"tool_calls": [call("shell", command="echo ran > ran.txt")]},
        {"text": "ok"},
    )
    assert not (scene.work / "ran.txt").exists()
    first, second = scene.records("call_result")
    assert first.get("status", "ok") == "ok"
    assert second["content"] == (
        "shell was not run: its hook failed (its script in the workspace (check.py) changed "
        "since the session started); do not retry it"
    )
    (notice,) = [n for n in events(done.stdout, "notice") if "hook" in n["message"]]
    assert "changed since the session started" in notice["message"]
