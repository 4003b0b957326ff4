"""A session whose file tools' checkpoints are made in-process (session/known.py), between
shell calls' by git's path: each checkpoint holds the files as its call left them, git
accepts the store (`fsck`, `read-tree` of every checkpoint), and a rewind to a file
tool's point restores its files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from orchestrator.session.shadow import Shadow
from tests.scenes import orchestrator
from tests.timetravel.conftest import points, scripted_run, sessions, verified
from tests.workspaces import workspace_files


def call(name: str, **arguments: str) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


SCRIPT = {
    "version": 1,
    "agents": {
        "main": [
            call("write_file", path="src/app.py", content="v = 1\n"),
            call("edit_file", path="src/app.py", old_text="v = 1", new_text="v = 2"),
            call("shell", command="sed -i s/2/3/ src/app.py && echo log > out.log"),
            call("write_file", path="notes/todo.txt", content="later\n"),
            call("write_file", path="skipped.log", content="ignored\n"),
            {"text": "Done."},
        ]
    },
}


def git(store: Path, *args: str, index: Path | None = None) -> str:
    env = {
        "PATH": os.environ["PATH"],
        "GIT_DIR": str(store / "git"),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    done = subprocess.run(["git", *args], env=env, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


def test_file_tools_checkpoints_hold_their_files_and_git_accepts_them(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitignore").write_text("*.log\n")
    root = scripted_run(tmp_path, "write files", SCRIPT)
    session_id = sessions(root)[0]
    verified(root, session_id)
    store = root / session_id / "files"
    found = [p for p in points(root, session_id) if p["kind"] == "checkpoint"]
    trees = [p["tree"] for p in found if "write_file" in p["summary"] or "edit" in p["summary"]]
    shown = [git(store, "show", f"{tree}:src/app.py") for tree in trees]
    assert shown == ["v = 1\n", "v = 2\n", "v = 3\n"]  # (the ignored file's: no new tree)
    last = found[-1]["tree"]
    assert git(store, "ls-tree", "-r", "--name-only", last).split() == [
        ".gitignore",
        "notes/todo.txt",
        "src/app.py",
    ]
    git(store, "fsck", "--strict", "--no-dangling", "--full")
    for n, point in enumerate(found):
        git(store, "read-tree", point["tree"], index=tmp_path / f"index-{n}")
    rewound = orchestrator(
        "sessions", "rewind", session_id, "--to", str(found[2]["seq"]), "--sessions-dir", str(root)
    )
    assert rewound.returncode == 0, rewound.stderr
    assert workspace_files(ws) == {
        ".gitignore": b"*.log\n",
        "out.log": b"log\n",  # (ignored: never in a checkpoint, left alone)
        "skipped.log": b"ignored\n",
        "src/app.py": b"v = 2\n",
    }


def test_a_rewind_while_the_index_lags_keeps_what_the_file_tools_stored(tmp_path: Path) -> None:
    """A process that ended behind its last in-process checkpoint (killed: the index lags
    on a new file, notes/new.txt); a `.gitignore` written since by hand ignores that file:
    the rewind's checkpoint of the workspace as it is (so the rewind can be undone) still
    holds it, as the index caught up with that checkpoint tracks it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitignore").write_text("*.log\n")
    root = scripted_run(tmp_path, "write files", SCRIPT)
    [parent] = sessions(root)
    store = Shadow(root / parent / "files", ws)
    store.capture()  # (git's path: the picture of the last checkpoint is taken)
    (ws / "notes" / "new.txt").write_text("new\n")
    store.capture(["notes/new.txt"])  # in-process, and no catch-up after: as if killed
    assert (root / parent / "files" / "index-behind").exists()  # the premise
    (ws / ".gitignore").write_text("*.log\nnotes/\n")
    found = [p for p in points(root, parent) if p["kind"] == "checkpoint"]
    rewound = orchestrator(
        "sessions", "rewind", parent, "--to", str(found[2]["seq"]), "--sessions-dir", str(root)
    )
    assert rewound.returncode == 0, rewound.stderr
    [fork] = [s for s in sessions(root) if s != parent]
    undo = [p for p in points(root, fork) if "before a restore" in p["summary"]]
    assert len(undo) == 1
    listed = git(root / fork / "files", "ls-tree", "-r", "--name-only", undo[0]["tree"])
    assert "notes/new.txt" in listed.split()
