"""Rewind restores what shell commands did to the workspace (a `sed -i`, an `rm`, a
generated file), and the path left stays a session of its own, unchanged; the rewind
itself can be undone."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.scenes import orchestrator
from tests.timetravel.conftest import every_byte, points, scripted_run, sessions, verified
from tests.workspaces import workspace_files

SCRIPT = {
    "version": 1,
    "agents": {
        "main": [
            {
                "tool_calls": [
                    {"name": "shell", "arguments": {"command": "sed -i s/one/two/ a.txt"}}
                ]
            },
            {"tool_calls": [{"name": "shell", "arguments": {"command": "rm b.txt"}}]},
            {"tool_calls": [{"name": "shell", "arguments": {"command": "echo made > gen.txt"}}]},
            {"text": "Done."},
        ]
    },
}


def shell_session(tmp_path: Path) -> tuple[Path, Path, str]:
    """A session whose main agent changed its workspace by shell commands only: (root,
    workspace, id)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    (ws / "b.txt").write_text("bee\n")
    root = scripted_run(tmp_path, "change files", SCRIPT)
    assert (ws / "a.txt").read_text() == "two\n"
    assert not (ws / "b.txt").exists()
    return root, ws, sessions(root)[0]


def test_rewind_restores_files_changed_only_by_shell_commands(tmp_path: Path) -> None:
    root, ws, session_id = shell_session(tmp_path)
    before = every_byte(root / session_id)
    found = points(root, session_id)
    calls = [p for p in found if p["kind"] == "checkpoint" and "shell" in p["summary"]]
    assert len(calls) == 3  # one per command, each naming the files as it left them
    rewound = orchestrator("sessions", "rewind", session_id, "--sessions-dir", str(root))
    assert rewound.returncode == 0, rewound.stderr
    assert "  restored    b.txt" in rewound.stdout
    assert "  overwritten a.txt" in rewound.stdout
    assert "  removed     gen.txt" in rewound.stdout
    assert workspace_files(ws) == {"a.txt": b"one\n", "b.txt": b"bee\n"}
    assert every_byte(root / session_id) == before  # the path left, unchanged
    fork = next(s for s in sessions(root) if s != session_id)
    verified(root, fork)
    manifest = orjson.loads((root / fork / "session.json").read_bytes())
    assert (manifest["parent"], manifest["workspace"]) == (session_id, str(ws.resolve()))
    # The rewind is undone by going to the checkpoint it took first.
    undo = next(p for p in points(root, fork) if "before a restore" in p["summary"])
    again = orchestrator(
        "sessions", "rewind", fork, "--to", str(undo["seq"]), "--sessions-dir", str(root)
    )
    assert again.returncode == 0, again.stderr
    assert workspace_files(ws) == {"a.txt": b"two\n", "gen.txt": b"made\n"}


def test_a_point_before_the_second_command(tmp_path: Path) -> None:
    root, ws, session_id = shell_session(tmp_path)
    first = next(p for p in points(root, session_id) if "shell" in p["summary"])
    forked = orchestrator(
        "sessions", "fork", session_id, "--at", str(first["seq"]), "--sessions-dir", str(root)
    )
    assert forked.returncode == 0, forked.stderr
    fork = next(s for s in sessions(root) if s != session_id)
    assert workspace_files(root / fork / "workspace") == {"a.txt": b"two\n", "b.txt": b"bee\n"}
    resumed = orchestrator("resume", fork, "--yes", "--sessions-dir", str(root))
    assert resumed.returncode == 0, resumed.stderr
    verified(root, fork)
    # The fork's own workspace ends as the original's did; the original's is untouched.
    assert workspace_files(root / fork / "workspace") == workspace_files(ws)
