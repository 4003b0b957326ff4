"""A real SIGKILL during a rewind: before the fork is listed, nothing is listed and the
same command makes it whole; during the restore (journaled before it starts), the same
command, or a resume of the fork, finishes it. The workspace ends fully restored, and
the session rewound is unchanged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.scenes import orchestrator
from tests.timetravel.conftest import every_byte, journal_kinds, scripted_run, sessions, verified

FILES = 3000  # enough that a restore takes a while to catch it in

SCRIPT = {
    "version": 1,
    "agents": {
        "main": [
            {"tool_calls": [{"name": "shell", "arguments": {"command": "rm -r many"}}]},
            {"text": "Removed."},
        ]
    },
}


def made(tmp_path: Path) -> tuple[Path, Path, str, dict[str, str]]:
    """A session whose shell command removed `FILES` files: (root, workspace, id, the
    workspace's bytes before it ran)."""
    ws = tmp_path / "ws"
    (ws / "many").mkdir(parents=True)
    for n in range(FILES):
        (ws / "many" / f"f{n}.txt").write_bytes(os.urandom(2048))
    before = every_byte(ws)
    root = scripted_run(tmp_path, "remove", SCRIPT)
    assert not (ws / "many").exists()
    return root, ws, sessions(root)[0], before


def rewind_killed_when(root: Path, session_id: str, when: Callable[[Path], bool]) -> None:
    """`sessions rewind` in a process group of its own, stopped at the first moment
    `when(root)` holds and then SIGKILLed (git with it)."""
    argv = [sys.executable, "-m", "orchestrator", "sessions", "rewind", session_id]
    with subprocess.Popen(
        [*argv, "--sessions-dir", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    ) as child:
        while not when(root):
            assert child.poll() is None, "the rewind ended before it was caught"
        os.killpg(child.pid, signal.SIGSTOP)
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL


def hidden_fork(root: Path) -> bool:
    return any(p.name.startswith(".fork-") for p in root.iterdir())


def restoring(session_id: str) -> Callable[[Path], bool]:
    """Whether a fork of `session_id` is listed with its restore journaled as begun."""

    def begun(root: Path) -> bool:
        for p in root.iterdir():
            journal = p / "journal.jsonl"
            fork = p.name[0] != "." and p.name != session_id and journal.exists()
            if fork and b'"k":"workspace_restoring"' in journal.read_bytes():
                return True
        return False

    return begun


def test_killed_before_the_fork_is_listed(tmp_path: Path) -> None:
    root, ws, session_id, before = made(tmp_path)
    original = every_byte(root / session_id)
    rewind_killed_when(root, session_id, hidden_fork)
    assert sessions(root) == [session_id]  # nothing half-made is listed
    again = orchestrator("sessions", "rewind", session_id, "--sessions-dir", str(root))
    assert again.returncode == 0, again.stderr
    assert not hidden_fork(root)  # what the kill left is cleared
    assert every_byte(ws) == before
    assert every_byte(root / session_id) == original
    (fork,) = set(sessions(root)) - {session_id}
    verified(root, fork)


def test_killed_during_the_restore_the_same_command_finishes_it(tmp_path: Path) -> None:
    root, ws, session_id, before = made(tmp_path)
    original = every_byte(root / session_id)
    rewind_killed_when(root, session_id, restoring(session_id))
    (fork,) = set(sessions(root)) - {session_id}
    assert journal_kinds(root / fork)[-1] == "workspace_restoring"  # caught mid-way
    assert every_byte(ws) != before
    again = orchestrator("sessions", "rewind", session_id, "--sessions-dir", str(root))
    assert again.returncode == 0, again.stderr
    assert f"finished the restore of {fork}" in again.stdout
    assert set(sessions(root)) == {session_id, fork}
    assert journal_kinds(root / fork)[-2:] == ["workspace_restoring", "workspace_restored"]
    assert every_byte(ws) == before
    assert every_byte(root / session_id) == original
    verified(root, fork)


def test_killed_during_the_restore_a_resume_finishes_it(tmp_path: Path) -> None:
    root, _ws, session_id, _before = made(tmp_path)
    rewind_killed_when(root, session_id, restoring(session_id))
    (fork,) = set(sessions(root)) - {session_id}
    assert journal_kinds(root / fork)[-1] == "workspace_restoring"
    resumed = orchestrator("resume", fork, "--yes", "--sessions-dir", str(root))
    assert resumed.returncode == 0, resumed.stderr
    kinds = journal_kinds(root / fork)
    at = kinds.index("workspace_restoring")
    assert kinds[at + 1] == "workspace_restored"  # before anything of the run
    verified(root, fork)
