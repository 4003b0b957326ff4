"""Fork the demo's session (delegation, a question, shell commands, a call in the
background, a re-plan, a compaction) at its points and resume each fork to its end: every
fork verifies, ends with the workspace the session ended with (the script goes on from the
point as a fresh run would), and the session forked is byte-for-byte unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenes import orchestrator
from tests.timetravel.conftest import (
    every_byte,
    journal_kinds,
    points,
    sessions,
    verified,
)
from tests.workspaces import workspace_files


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, bytes]]:
    """The demo run once (no crash): its sessions root, id, and the workspace it ended
    with."""
    tmp = tmp_path_factory.mktemp("demo")
    ws, root = tmp / "ws", tmp / "sessions"
    ran = orchestrator("demo", "--no-crash", "-w", str(ws), "--sessions-dir", str(root))
    assert ran.returncode == 0, ran.stderr
    return root, sessions(root)[0], workspace_files(ws)


def fork_and_finish(root: Path, session_id: str, at: int) -> str:
    before = set(sessions(root))
    forked = orchestrator(
        "sessions", "fork", session_id, "--at", str(at), "--sessions-dir", str(root)
    )
    assert forked.returncode == 0, forked.stderr
    (fork,) = set(sessions(root)) - before
    resumed = orchestrator("resume", fork, "--yes", "--plain", "--sessions-dir", str(root))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    verified(root, fork)
    return fork


def check_forks(demo: tuple[Path, str, dict[str, bytes]], kinds: set[str] | None) -> None:
    root, session_id, ended_with = demo
    original = every_byte(root / session_id)
    found = points(root, session_id)
    assert {p["kind"] for p in found} >= {"start", "plan", "decision", "delegated", "task_ended"}
    assert {"checkpoint", "compaction"} <= {p["kind"] for p in found}
    chosen = found if kinds is None else [p for p in found if p["kind"] in kinds]
    # (once per kind, the last of each: the demo's forks take seconds each)
    if kinds is not None:
        chosen = list({p["kind"]: p for p in chosen}.values())
    for point in chosen:
        fork = fork_and_finish(root, session_id, point["seq"])
        assert workspace_files(root / fork / "workspace") == ended_with, point
        assert journal_kinds(root / fork)[point["seq"]] == "session_forked"
    assert every_byte(root / session_id) == original


def test_forks_at_a_point_of_each_kind_end_as_the_session_did(
    demo: tuple[Path, str, dict[str, bytes]],
) -> None:
    check_forks(demo, {"plan", "decision", "delegated", "task_ended", "compaction", "checkpoint"})


@pytest.mark.slow
def test_forks_at_every_point_end_as_the_session_did(
    demo: tuple[Path, str, dict[str, bytes]],
) -> None:
    check_forks(demo, None)


def test_a_fork_needs_a_point_of_the_journal_and_a_checkpoint_to_restore(
    demo: tuple[Path, str, dict[str, bytes]],
) -> None:
    root, session_id, _ = demo
    far = orchestrator(
        "sessions", "fork", session_id, "--at", "100000", "--sessions-dir", str(root)
    )
    assert far.returncode != 0
    assert f"no point 100000 in session {session_id}: its journal has seqs 1-" in far.stderr
    first = orchestrator("sessions", "fork", session_id, "--at", "1", "--sessions-dir", str(root))
    assert first.returncode != 0
    assert "has no workspace checkpoint at or before seq 1" in first.stderr
    listed = set(sessions(root))
    left = orchestrator(
        "sessions",
        "fork",
        session_id,
        "--at",
        "1",
        "--workspace",
        "none",
        "--sessions-dir",
        str(root),
    )
    assert left.returncode == 0, left.stderr
    assert len(set(sessions(root)) - listed) == 1
