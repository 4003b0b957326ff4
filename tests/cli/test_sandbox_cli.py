"""The sandbox through the command line (issue 20): on by default, `--sandbox off` and
`[shell] sandbox`, the path where the machine has none (forced by `[shell]
sandbox_probe`), `sandbox_required`, and a project's config that may only tighten it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from orchestrator import ToolCall
from orchestrator.cli.prompt import describe_call
from orchestrator.tools import Sandbox

if not Sandbox().active:  # pragma: no cover - this machine class has what it takes
    pytest.skip(f"no sandbox here: {Sandbox().unavailable()}", allow_module_level=True)


def run(
    tmp_path: Path, outside: Path, *flags: str, config: str = ""
) -> subprocess.CompletedProcess[str]:
    """A run whose only call is a shell command writing to `outside` the workspace."""
    script = tmp_path / "script.json"
    call = {"name": "shell", "arguments": {"command": f"echo x > {outside}; echo ran"}}
    script.write_bytes(orjson.dumps({"agents": {"main": [{"tool_calls": [call]}, {"text": "ok"}]}}))
    (tmp_path / "config.toml").write_text(config)
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "orchestrator", "run", "g", "--model", f"scripted:{script}"]
    command += ["-w", str(workspace), "--yes", "--config", str(tmp_path / "config.toml"), *flags]
    env = {**os.environ, "NO_COLOR": "1", "ORCHESTRATOR_SESSIONS_DIR": str(tmp_path / "s")}
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


@pytest.mark.parametrize(
    ("flags", "config", "confined"),
    [
        ((), "", True),
        (("--sandbox", "strict"), "", True),
        (("--sandbox", "off"), "", False),
        ((), '[shell]\nsandbox = "off"\n', False),
    ],
    ids=["default", "strict", "flag-off", "config-off"],
)
def test_the_shell_is_sandboxed_by_default(
    tmp_path: Path, flags: tuple[str, ...], config: str, confined: bool
) -> None:
    outside = tmp_path / "outside.txt"
    result = run(tmp_path, outside, *flags, config=config)
    assert result.returncode == 0, result.stderr
    assert outside.exists() != confined
    assert "unsandboxed" not in result.stdout


def test_where_there_is_no_sandbox_the_run_says_so_and_goes_on(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    config = '[shell]\nsandbox_probe = "unavailable"\n'
    result = run(tmp_path, outside, config=config)
    assert result.returncode == 0, result.stderr
    [notice] = [line for line in result.stdout.splitlines() if "unsandboxed" in line]
    assert notice.startswith("note: shell commands run unsandboxed here: ")
    assert outside.exists()


def test_a_required_sandbox_that_is_missing_refuses_to_start(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    config = '[shell]\nsandbox_probe = "unavailable"\nsandbox_required = true\n'
    result = run(tmp_path, outside, config=config)
    assert result.returncode == 2, result.stderr
    assert "cannot be sandboxed here" in result.stderr
    assert "sandbox_required" in result.stderr
    assert not outside.exists()
    assert not (tmp_path / "s").exists() or not list((tmp_path / "s").iterdir())


def test_a_project_may_tighten_the_sandbox_but_not_loosen_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    project = tmp_path / "ws" / ".orchestrator"
    project.mkdir(parents=True)
    (project / "config.toml").write_text('[shell]\nsandbox = "off"\nnetwork = true\n')
    loosened = run(tmp_path, outside)
    # Without the user's trust (no terminal to ask), the project's wider settings refuse
    # the run, naming them.
    assert loosened.returncode != 0
    assert "shell.sandbox" in loosened.stderr
    assert not outside.exists()
    (project / "config.toml").write_text('[shell]\nsandbox = "strict"\nsandbox_required = true\n')
    tightened = run(tmp_path, outside)
    assert tightened.returncode == 0, tightened.stderr
    assert not outside.exists()


def test_the_prompt_says_how_a_command_runs_and_when_it_asks_for_the_network() -> None:
    shown = Sandbox().describe()
    plain = ToolCall(id="c1", name="shell", arguments='{"command": "make"}')
    online = ToolCall(
        id="c2", name="shell", arguments='{"command": "pip install x", "network": true}'
    )
    assert describe_call(plain, sandbox=shown).split("\n")[0] == (
        "shell wants to run (sandboxed: workspace, no network):"
    )
    assert describe_call(online, sandbox=shown).split("\n")[0] == (
        "shell wants to run (sandboxed: workspace, no network; it asks for the network for "
        "this command):"
    )
    off = Sandbox(level="off").describe()
    assert describe_call(plain, sandbox=off).split("\n")[0] == (
        "shell wants to run (not sandboxed: the sandbox is off):"
    )
