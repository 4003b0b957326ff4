"""The checkpoint store over a real workspace, with the real `git`: the first checkpoint
holds every file, later ones what changed; `.gitignore` and the caps are honoured (what is
left out is said, and a restore leaves it alone); a restore brings back what a shell
command changed, removed or made."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orchestrator.session.checkpoints import Checkpointer
from orchestrator.session.shadow import EMPTY_TREE, Shadow, available
from orchestrator.state.fold import SessionState

pytestmark = pytest.mark.skipif(not available(), reason="needs git")


def files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def shadow(tmp_path: Path, **caps: int) -> tuple[Shadow, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "session").mkdir()
    return Shadow(tmp_path / "session" / "files", ws, **caps), ws


def sh(command: str, cwd: Path) -> None:
    subprocess.run(["sh", "-c", command], cwd=cwd, check=True)


def test_a_restore_undoes_what_shell_commands_did(tmp_path: Path) -> None:
    store, ws = shadow(tmp_path)
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("x = 'one'\n")
    (ws / "notes.txt").write_text("keep me\n")
    before = files(ws)
    first = store.capture()
    sh("sed -i s/one/two/ src/a.py && rm notes.txt && echo made > gen.txt", ws)
    after = store.capture()
    assert after.tree != first.tree
    assert sorted(store.changes(after.tree, first.tree)) == [
        ("A", "notes.txt"),
        ("D", "gen.txt"),
        ("M", "src/a.py"),
    ]
    store.restore(first.tree)
    assert files(ws) == before
    store.capture()
    store.restore(after.tree)  # and forward again
    assert (ws / "gen.txt").read_text() == "made\n"
    assert not (ws / "notes.txt").exists()


def test_ignored_and_oversized_files_are_left_out_and_left_alone(tmp_path: Path) -> None:
    store, ws = shadow(tmp_path, file_cap=1000)
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "run.log").write_text("ignored")
    (ws / "big.bin").write_bytes(b"x" * 1001)
    (ws / "small.txt").write_text("small")
    taken = store.capture()
    assert len(taken.left_out) == 1
    assert taken.left_out[0].startswith("big.bin (1001 bytes, over 1000 bytes)")
    listed = store.git("ls-tree", "-r", "--name-only", taken.tree).decode().split()
    assert listed == [".gitignore", "small.txt"]
    (ws / "small.txt").write_text("changed")
    (ws / "run.log").write_text("still mine")
    (ws / "big.bin").write_bytes(b"y" * 2000)
    store.capture()
    store.restore(taken.tree)
    assert (ws / "small.txt").read_text() == "small"
    assert (ws / "run.log").read_text() == "still mine"
    assert (ws / "big.bin").read_bytes() == b"y" * 2000


def test_the_checkpoint_cap_leaves_the_rest_out(tmp_path: Path) -> None:
    store, ws = shadow(tmp_path, checkpoint_cap=250)
    for name in "abc":
        (ws / f"{name}.txt").write_bytes(b"z" * 100)
    taken = store.capture()
    assert taken.left_out == ("c.txt (the checkpoint's 250 bytes were reached)",)


def test_nothing_changed_is_the_same_tree_and_known_paths_are_enough(tmp_path: Path) -> None:
    store, ws = shadow(tmp_path)
    assert store.capture().tree == EMPTY_TREE
    (ws / "a.txt").write_text("a")
    one = store.capture(["a.txt"])
    assert one.tree != EMPTY_TREE
    assert store.capture().tree == one.tree
    (ws / "a.txt").write_text("b")
    (ws / "other.txt").write_text("not looked at")
    two = store.capture(["a.txt"])
    assert store.git("ls-tree", "--name-only", two.tree).decode().split() == ["a.txt"]


def test_without_git_checkpoints_are_off_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    said: list[str] = []
    assert Checkpointer.of(tmp_path, tmp_path, SessionState(), said.append) is None
    assert said == ["workspace checkpoints are off: git is not installed (everything else works)"]


def test_sessions_kept_in_the_workspace_are_never_its_files(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    session = ws / "sessions" / "20261129T000000-abcdef"
    session.mkdir(parents=True)
    (session / "journal.jsonl").write_text("{}\n")
    (ws / "sessions" / "other.txt").write_text("another session's")
    (ws / "a.txt").write_text("mine")
    store = Shadow(session / "files", ws)
    taken = store.capture()
    assert store.git("ls-tree", "-r", "--name-only", taken.tree).decode().split() == ["a.txt"]


def test_a_store_copied_without_its_empty_directories_still_works(tmp_path: Path) -> None:
    """A recorded session in a git repository, an archive: git keeps no empty directory,
    and a bare repository without `refs/` is none. The store makes them again."""
    store, ws = shadow(tmp_path)
    (ws / "a.txt").write_text("one\n")
    first = store.capture()
    for empty in sorted(store.git_dir.rglob("*"), reverse=True):
        if empty.is_dir() and not any(empty.iterdir()):
            empty.rmdir()
    assert not (store.git_dir / "refs").exists()
    (ws / "a.txt").write_text("two\n")
    again = Shadow(store.store, ws)
    again.ensure()
    second = again.capture()
    again.restore(first.tree)
    assert (ws / "a.txt").read_text() == "one\n"
    assert second.tree != first.tree
