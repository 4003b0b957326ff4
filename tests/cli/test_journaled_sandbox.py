"""The sandbox's level and network are journaled with the session's settings (issue 37
item 5): a run killed (SIGKILL) and resumed with the command it printed runs its next
shell command as confined as the session chose, whatever the config says by then; only
a flag given on that resume loosens it, said in one line. `sessions show` says them."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from orchestrator.tools import Sandbox
from tests.scenes import killed_when, pasted

if not Sandbox().active:  # pragma: no cover - this machine class has what it takes
    pytest.skip(f"no sandbox here: {Sandbox().unavailable()}", allow_module_level=True)


# The sandbox says which protection of socket files is in force (docs/security.md).
PROTECTION = "note: shell commands run sandboxed"


def killed_run(tmp_path: Path, *flags: str) -> tuple[str, Path]:
    """A run whose first call (`sleep`) is cut by a SIGKILL of its process group, and
    whose next writes to `outside` the workspace: (the resume command its first line
    printed, `outside`)."""
    outside = tmp_path / "outside.txt"
    calls = [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "sleep 5"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": f"echo x > {outside}"}}]},
        {"text": "done"},
    ]
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps({"agents": {"main": calls}}))
    (tmp_path / "config.toml").touch()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    argv = [
        "run", "g", "--model", f"scripted:{script}",
        "-w", str(workspace), "--yes", "--json", "--config", str(tmp_path / "config.toml"),
        "--sessions-dir", str(tmp_path / "s"), *flags,
    ]  # fmt: skip
    first = killed_when(argv, lambda event: event["kind"] == "tool_call_started")
    found = re.search(r"; to resume it: (orchestrator .*)$", first)
    assert found, first
    return found.group(1), outside


def settings(tmp_path: Path) -> dict[str, object]:
    [session] = [p.name for p in (tmp_path / "s").iterdir()]
    shown = pasted(f"orchestrator sessions show {session} --json --sessions-dir {tmp_path / 's'}")
    value: dict[str, object] = orjson.loads(shown.stdout)["settings"]
    return value


def test_a_resume_keeps_the_journaled_sandbox_though_the_config_would_loosen_it(
    tmp_path: Path,
) -> None:
    command, outside = killed_run(tmp_path, "--sandbox", "strict")
    assert "--sandbox" not in command  # journaled: the pasted resume needs no flag
    (tmp_path / "config.toml").write_text('[shell]\nsandbox = "off"\nnetwork = true\n')
    resumed = pasted(command)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert not outside.exists()  # still confined: strict, as journaled
    notes = [
        line
        for line in resumed.stdout.splitlines()
        if line.startswith("note: ") and not line.startswith(PROTECTION)
    ]
    assert notes == [
        "note: the session keeps its sandbox strict, as journaled; [shell] sandbox off does "
        "not loosen it (--sandbox off would)",
        "note: the session keeps its commands off the network, as journaled; [shell] "
        "network = true does not let them on (--network would)",
    ]
    assert (settings(tmp_path)["sandbox"], settings(tmp_path)["network"]) == ("strict", False)


def test_a_flag_given_on_the_resume_loosens_it_and_says_so(tmp_path: Path) -> None:
    command, outside = killed_run(tmp_path, "--sandbox", "strict")
    resumed = pasted(command, "--sandbox", "off", "--network")
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert outside.exists()
    assert (
        "note: the session's sandbox loosened from strict to off, as --sandbox asks"
        in resumed.stdout.splitlines()
    )
    assert (
        "note: the session's commands may reach the network from now on, as --network asks"
        in resumed.stdout.splitlines()
    )
    assert (settings(tmp_path)["sandbox"], settings(tmp_path)["network"]) == ("off", True)


def test_tightening_needs_nothing_and_sessions_show_says_it(tmp_path: Path) -> None:
    command, outside = killed_run(tmp_path, "--sandbox", "off")
    resumed = pasted(command, "--sandbox", "workspace")
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert not outside.exists()
    assert not [
        line
        for line in resumed.stdout.splitlines()
        if line.startswith("note: ") and not line.startswith(PROTECTION)
    ]
    [session] = [p.name for p in (tmp_path / "s").iterdir()]
    shown = pasted(f"orchestrator sessions show {session} --sessions-dir {tmp_path / 's'}")
    assert "sandbox    workspace, no network\n" in shown.stdout
