"""A checkpoint of the paths a file tool wrote is made in-process (session/known.py): the
same tree git's path makes (`git add` of the paths, `write-tree`), objects git accepts,
caps and `.gitignore` honoured as git's path honours them, and an index the next
checkpoint by git's path (a shell call's, a restore) finds consistent.

Each case runs one store in-process and a second store over the same workspace by git's
path (a fresh `Shadow` each time has no picture, so takes git's path), and compares."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.errors import SessionError
from orchestrator.session.shadow import Capture, Shadow, available

pytestmark = pytest.mark.skipif(not available(), reason="needs git")


class Pair:
    """The store under test (in-process where it can) and git's path beside it."""

    def __init__(self, tmp_path: Path, **caps: int) -> None:
        self.ws = tmp_path / "ws"
        self.ws.mkdir()
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        self.caps = caps
        self.fast = Shadow(tmp_path / "a" / "files", self.ws, **caps)
        self.git_store = tmp_path / "b" / "files"

    def git_path(self, paths: list[str] | None = None) -> Capture:
        return Shadow(self.git_store, self.ws, **self.caps).capture(paths)

    def both(self, paths: list[str] | None = None, in_process: bool | None = None) -> Capture:
        """Checkpoint `paths` by each; the same tree and lines, and whether the store
        under test ran git (its index rewritten) as `in_process` says (default: whether
        paths are given)."""
        in_process = paths is not None if in_process is None else in_process
        before = index_stat(self.fast)
        fast = self.fast.capture(paths)
        assert (index_stat(self.fast) == before) is in_process
        slow = self.git_path(paths)
        assert fast == slow
        return fast

    def write(self, path: str, data: bytes) -> None:
        (self.ws / path).parent.mkdir(parents=True, exist_ok=True)
        (self.ws / path).write_bytes(data)


def index_stat(store: Shadow) -> tuple[int, int] | None:
    try:
        found = store.index_file.stat()
    except FileNotFoundError:
        return None
    return found.st_mtime_ns, found.st_ino


def outcome(store: Shadow, paths: list[str]) -> Capture | str:
    try:
        return store.capture(paths)
    except SessionError as exc:
        return str(exc).split(": ", 1)[1]  # (the store's name aside)


def git(store: Shadow, *args: str) -> str:
    return store.git(*args).decode()


def test_a_file_tool_checkpoint_is_git_s_tree_without_git(tmp_path: Path) -> None:
    pair = Pair(tmp_path)
    pair.write("src/a.py", b"one\n")
    pair.write("README", b"read me\n")
    pair.both()
    steps: list[tuple[str, Callable[[], object], list[str], bool]] = [
        ("an edit", lambda: pair.write("src/a.py", b"two\n"), ["src/a.py"], True),
        ("the same bytes", lambda: pair.write("src/a.py", b"two\n"), ["src/a.py"], True),
        ("a new file", lambda: pair.write("new.txt", b"new\n"), ["new.txt"], True),
        ("new directories", lambda: pair.write("x/y/z.txt", b"deep\n"), ["x/y/z.txt"], True),
        ("executable", lambda: (pair.ws / "new.txt").chmod(0o755), ["new.txt"], True),
        ("a link", lambda: (pair.ws / "link").symlink_to("src/a.py"), ["link"], True),
        ("gone", lambda: (pair.ws / "x" / "y" / "z.txt").unlink(), ["x/y/z.txt"], True),
        ("a name sorted", lambda: pair.write("src.txt", b"sorts before src/\n"), ["src.txt"], True),
        ("a .gitignore", lambda: pair.write(".gitignore", b"*.log\n"), [".gitignore"], False),
        ("ignored, new", lambda: pair.write("run.log", b"ignored\n"), ["run.log"], True),
    ]
    for _why, step, paths, in_process in steps:
        step()
        taken = pair.both(paths, in_process)
    listed = git(pair.fast, "ls-tree", "-r", "--name-only", taken.tree).split()
    assert listed == [".gitignore", "README", "link", "new.txt", "src.txt", "src/a.py"]
    assert "x" not in git(pair.fast, "ls-tree", "--name-only", taken.tree).split()


def test_git_accepts_every_object_written(tmp_path: Path) -> None:
    pair = Pair(tmp_path)
    pair.write("a/b/c.txt", b"c\n")
    first = pair.fast.capture()
    for n in range(5):
        pair.write(f"a/b/n{n}.txt", f"{n}\n".encode())
        pair.write("a/b/c.txt", f"c {n}\n".encode())
        taken = pair.fast.capture([f"a/b/n{n}.txt", "a/b/c.txt"])
    check = subprocess.run(
        ["git", "fsck", "--strict", "--no-dangling", "--no-progress", "--full"],
        env={k: v for k, v in pair.fast.env().items() if k != "GIT_WORK_TREE"},
        capture_output=True,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    # Read into an index of its own, then into the workspace elsewhere: git's bytes.
    other = Shadow(pair.fast.store, tmp_path / "elsewhere", index=tmp_path / "other-index")
    other.restore(taken.tree)
    assert (tmp_path / "elsewhere" / "a" / "b" / "n4.txt").read_bytes() == b"4\n"
    assert (tmp_path / "elsewhere" / "a" / "b" / "c.txt").read_bytes() == b"c 4\n"
    assert first.tree != taken.tree


def test_caps_leave_out_what_git_s_path_leaves_out(tmp_path: Path) -> None:
    pair = Pair(tmp_path, file_cap=1000, checkpoint_cap=1500)
    pair.write("big.bin", b"x" * 10)
    pair.both()
    pair.write("big.bin", b"x" * 1001)  # tracked, now over the cap: out of the tree
    taken = pair.both(["big.bin"])
    assert taken.left_out == ("big.bin (1001 bytes, over 1000 bytes)",)
    pair.write("one.txt", b"1" * 800)
    pair.write("two.txt", b"2" * 800)
    taken = pair.both(["one.txt", "two.txt"])
    assert taken.left_out == ("two.txt (the checkpoint's 1500 bytes were reached)",)


def test_tracked_files_are_stored_though_ignored_as_git_add_stores_them(tmp_path: Path) -> None:
    pair = Pair(tmp_path)
    pair.write("keep.log", b"one\n")
    pair.both()
    pair.write(".gitignore", b"*.log\nbuild/\n")
    pair.both()
    pair.write("keep.log", b"two\n")
    pair.write("build/out.o", b"built\n")
    pair.write("fresh.log", b"new\n")
    taken = pair.both(["keep.log", "build/out.o", "fresh.log"])
    assert git(pair.fast, "ls-tree", "-r", "--name-only", taken.tree).split() == [
        ".gitignore",
        "keep.log",
    ]


def test_what_git_would_convert_or_refuse_takes_git_s_path(tmp_path: Path) -> None:
    pair = Pair(tmp_path)
    pair.write(".gitattributes", b"* text=auto\n")
    pair.write("plain.txt", b"lf\n")
    pair.write("nested/.git/HEAD", b"ref: refs/heads/main\n")
    pair.both()
    pair.write("plain.txt", b"still lf\n")
    pair.both(["plain.txt"], in_process=True)
    pair.write("crlf.txt", b"one\r\ntwo\r\n")  # git stores it with \n: git's path
    taken = pair.both(["crlf.txt"], in_process=False)
    assert git(pair.fast, "cat-file", "-p", f"{taken.tree}:crlf.txt") == "one\ntwo\n"
    pair.write("wide/.gitattributes", b"*.txt working-tree-encoding=UTF-16LE\n")
    pair.both()
    pair.write("wide/hi.txt", "hi\n".encode("utf-16-le"))  # git stores UTF-8
    taken = pair.both(["wide/hi.txt"], in_process=False)
    assert git(pair.fast, "cat-file", "-p", f"{taken.tree}:wide/hi.txt") == "hi\n"
    (pair.ws / "linked").symlink_to("sub")
    pair.write("sub/inner.txt", b"under a link\n")
    pair.write("nested/inner.txt", b"its own repository's\n")
    pair.both(["sub/inner.txt"], in_process=True)
    for paths in (["nested/inner.txt"], ["linked/inner.txt"], ["./plain.txt"], ["sub"]):
        pair.write("plain.txt", f"{paths}\n".encode())
        assert outcome(pair.fast, paths) == outcome(Shadow(pair.git_store, pair.ws), paths)
        assert not pair.fast.behind_file.exists(), paths


def test_the_next_scan_and_restore_see_what_was_checkpointed_in_process(tmp_path: Path) -> None:
    pair = Pair(tmp_path)
    pair.write("a.txt", b"a\n")
    first = pair.both()
    pair.write("added.txt", b"added in-process\n")
    pair.write("a.txt", b"changed in-process\n")
    second = pair.both(["added.txt", "a.txt"])
    assert pair.fast.behind_file.read_text().strip() == second.tree
    # A shell command then ignores and changes what the file tools wrote.
    pair.write(".gitignore", b"added.txt\n")
    pair.write("added.txt", b"changed by a command\n")
    third = pair.both(in_process=False)
    assert git(pair.fast, "ls-tree", "--name-only", third.tree).split() == [
        ".gitignore",
        "a.txt",
        "added.txt",
    ]
    assert not pair.fast.behind_file.exists()
    pair.write("later.txt", b"in-process again\n")
    pair.both(["later.txt"])
    pair.fast.restore(first.tree)  # removes what only checkpoints in-process held
    assert sorted(p.name for p in pair.ws.iterdir()) == ["a.txt"]
    assert (pair.ws / "a.txt").read_bytes() == b"a\n"


def test_a_process_that_ended_behind_is_caught_up_by_the_next(tmp_path: Path) -> None:
    pair = Pair(tmp_path)
    pair.write("a.txt", b"a\n")
    pair.both()
    pair.write("new.txt", b"new\n")
    pair.write("a.txt", b"changed\n")
    behind = pair.both(["new.txt", "a.txt"])
    pair.write(".gitignore", b"new.txt\n")
    next_run = Shadow(pair.fast.store, pair.ws)  # (a new process: nothing in memory)
    assert next_run.capture() == pair.git_path()
    assert "new.txt" in git(next_run, "ls-files").split()
    assert behind.tree != git(next_run, "write-tree").strip()


def test_an_index_another_writer_changed_takes_git_s_path(tmp_path: Path) -> None:
    pair = Pair(tmp_path)
    pair.write("a.txt", b"a\n")
    first = pair.both()
    pair.write("a.txt", b"b\n")
    pair.both()
    Shadow(pair.fast.store, pair.ws).restore(first.tree)  # not through `pair.fast`
    pair.write("b.txt", b"b\n")
    taken = pair.fast.capture(["b.txt"])  # from the index as restored, not the last tree
    assert git(pair.fast, "ls-tree", "--name-only", taken.tree).split() == ["a.txt", "b.txt"]
    assert git(pair.fast, "cat-file", "-p", f"{taken.tree}:a.txt") == "a\n"


def test_ignore_rules_a_command_changed_are_read_again(tmp_path: Path) -> None:
    """A new file is asked of a `git check-ignore` kept running, which keeps each
    `.gitignore` it read: one changed since (by a command: no checkpoint between) is
    read again."""
    pair = Pair(tmp_path)
    pair.write("sub/keep.txt", b"k\n")
    pair.both()
    pair.write("sub/one.log", b"1\n")
    pair.both(["sub/one.log"])  # (no .gitignore yet)
    pair.write(".gitignore", b"*.log\n")
    pair.write("sub/two.log", b"2\n")
    pair.both(["sub/two.log"])
    pair.write("sub/.gitignore", b"!three.log\n")
    pair.write("sub/three.log", b"3\n")
    taken = pair.both(["sub/three.log"])
    pair.write(".gitignore", b"*.txt\n")
    pair.write("sub/four.log", b"4\n")
    taken = pair.both(["sub/four.log"])
    assert git(pair.fast, "ls-tree", "-r", "--name-only", taken.tree).split() == [
        "sub/four.log",
        "sub/keep.txt",
        "sub/one.log",
        "sub/three.log",
    ]


def test_a_check_ignore_that_ended_is_not_waited_for(tmp_path: Path) -> None:
    pair = Pair(tmp_path)
    pair.write(".gitignore", b"*.log\n")
    pair.both()
    pair.write("a.log", b"a\n")
    pair.both(["a.log"])
    running = pair.fast._ignores
    assert running is not None
    assert running._process is not None
    running._process.kill()  # (as the machine might: the checkpoint asks git once instead)
    running._process.wait()
    pair.write("b.log", b"b\n")
    pair.write("c.txt", b"c\n")
    taken = pair.both(["b.log", "c.txt"])
    assert git(pair.fast, "ls-tree", "--name-only", taken.tree).split() == [".gitignore", "c.txt"]
