"""No process outlives orchestrator (issue 37): a session SIGKILLed while its shell
command runs takes the command with it, sandboxed or not, and the scratch directory it
left in $TMPDIR is removed by the next start. These run real processes."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from orchestrator.tools import Sandbox
from orchestrator.tools.sandbox import SCRATCH_PREFIX, clean_scratch
from orchestrator.tools.shell import marked
from tests.scenes import wait_until


@pytest.mark.parametrize("level", ["workspace", "off"])
def test_a_sigkilled_session_takes_its_commands_with_it(tmp_path: Path, level: str) -> None:
    if level != "off" and not Sandbox().active:  # pragma: no cover
        pytest.skip(f"no sandbox here: {Sandbox().unavailable()}")
    workspace, sessions, temp = tmp_path / "ws", tmp_path / "s", tmp_path / "tmp"
    for made in (workspace, sessions, temp):
        made.mkdir()
    command = "echo started > started; sleep 0.4; echo late >> log"
    call = {"name": "shell", "arguments": {"command": command}}
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps({"agents": {"main": [{"tool_calls": [call]}, {"text": "ok"}]}}))
    argv = [sys.executable, "-m", "orchestrator", "run", "g", "--model", f"scripted:{script}"]
    argv += ["-w", str(workspace), "--yes", "--sandbox", level]
    env = {**os.environ, "NO_COLOR": "1", "ORCHESTRATOR_SESSIONS_DIR": str(sessions)}
    env["TMPDIR"] = str(temp)
    with subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as run:
        try:
            started = workspace / "started"
            assert wait_until(lambda: started.exists() or run.poll() is not None, 30)
            assert run.poll() is None, run.stderr.read() if run.stderr else ""
            run.send_signal(signal.SIGKILL)
        finally:
            run.kill()
    [session] = [p.name for p in sessions.iterdir()]
    # Every process of the session gone (found by the marker in their environment)...
    assert wait_until(lambda: not marked(f"{session}/"))
    # ... and gone before the command's last line ran.
    assert not (workspace / "log").exists()
    left = list(temp.glob(f"{SCRATCH_PREFIX}*"))
    assert len(left) == (1 if level != "off" else 0)
    assert clean_scratch(temp) == left  # the next start removes it
    assert list(temp.iterdir()) == []


def test_a_scratch_directory_whose_process_lives_is_kept(tmp_path: Path) -> None:
    live, dead = tmp_path / f"{SCRATCH_PREFIX}live", tmp_path / f"{SCRATCH_PREFIX}dead"
    for made in (live, dead):
        made.mkdir()
        (made / "file").write_text("x")
    held = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # as its process holds it while it lives
        assert clean_scratch(tmp_path) == [dead]
        assert live.exists()
        assert not dead.exists()
    finally:
        os.close(held)
