"""The store of a session's workspace checkpoints: a shadow git repository in the session's
directory (`files/git`, with its own index `files/index`), whose work tree is the
workspace. docs/time-travel.md argues the choice against a store of our own.

A checkpoint is a git tree: `capture` brings the index up to the workspace (what
`git ls-files` finds changed, deleted or new, `.gitignore` honoured, each file within
`FILE_CAP` and the whole within `CHECKPOINT_CAP`) and writes the tree; unchanged files
cost a `stat` each and no read. `restore` makes the workspace a tree again: files the
index has and the tree lacks are removed, the tree's written; files the store never
held (ignored, over a cap) are left alone. Nothing here reads the user's git
configuration or the workspace's own repository: the store's config is its own, and git
is run with `GIT_CONFIG_GLOBAL` and `GIT_CONFIG_NOSYSTEM` cut off.

Synchronous (subprocesses): callers run it in a worker thread.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import SessionError

STORE = "files"  # in the session's directory
FILE_CAP = 16 * 1024 * 1024
"""Bytes: a larger file is left out of a checkpoint (a restore leaves it alone)."""
CHECKPOINT_CAP = 512 * 1024 * 1024
"""Bytes of new or changed content one checkpoint stores at most; what comes after is
left out of it (named in its record)."""
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_CONFIG = (
    ("core.bare", "false"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.quotepath", "false"),
    ("core.compression", "1"),  # a checkpoint is read back seldom: speed over size
    ("core.looseCompression", "1"),
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "true"),
    ("gc.auto", "0"),  # no tree is reachable from a ref: never collect it
    ("advice.detachedHead", "false"),
)


class CheckpointsUnavailable(SessionError):
    """Workspace checkpoints cannot be taken here (no `git`); everything else works."""


@dataclass(frozen=True)
class Capture:
    """A checkpoint taken: its tree, and the paths left out of it, each with why."""

    tree: str
    left_out: tuple[str, ...] = ()


@dataclass
class Shadow:
    """The checkpoint store of one session over one workspace."""

    store: Path  # <session>/files
    workspace: Path
    file_cap: int = FILE_CAP
    checkpoint_cap: int = CHECKPOINT_CAP
    index: Path | None = None  # default: <store>/index
    _env: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        # (git runs in the workspace: a relative path would be taken from there)
        self.store = self.store.absolute()
        self.workspace = self.workspace.absolute()

    @property
    def git_dir(self) -> Path:
        return self.store / "git"

    @property
    def index_file(self) -> Path:
        return self.index or self.store / "index"

    def env(self) -> dict[str, str]:
        if not self._env:
            self._env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": str(self.store),
                "LC_ALL": "C",
                "GIT_DIR": str(self.git_dir),
                "GIT_WORK_TREE": str(self.workspace),
                "GIT_INDEX_FILE": str(self.index_file),
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": os.devnull,
                "GIT_TERMINAL_PROMPT": "0",
                "GIT_LITERAL_PATHSPECS": "1",
            }
        return self._env

    def git(self, *args: str, data: bytes | None = None, tree: bool = True) -> bytes:
        env = self.env()
        if not tree:  # (git init refuses a work tree)
            env = {k: v for k, v in env.items() if k not in ("GIT_WORK_TREE", "GIT_DIR")}
        try:
            done = subprocess.run(
                [_git(), *args],
                input=data,
                capture_output=True,
                env=env,
                cwd=self.workspace if self.workspace.is_dir() else self.store,
                check=False,
            )
        except OSError as exc:
            raise CheckpointsUnavailable(f"cannot run git: {exc}") from exc
        if done.returncode != 0:
            error = done.stderr.decode(errors="replace").strip()
            raise SessionError(f"git {args[0]} failed in {self.git_dir}: {error}")
        return done.stdout

    def ensure(self) -> None:
        """Make the store if it is not there yet (an interrupted making is made again).
        A store copied by a tool that keeps no empty directory (a git repository holding a
        recorded session, an archive) gets back those git needs to take it for one."""
        if (self.git_dir / "ready").exists():
            for empty in _EMPTY_DIRS:
                (self.git_dir / empty).mkdir(parents=True, exist_ok=True)
            return
        self.store.mkdir(mode=0o700, exist_ok=True)
        self.git("init", "-q", "--bare", "--template=", str(self.git_dir), tree=False)
        # (Written at once: a `git config` per key is a process each.)
        with (self.git_dir / "config").open("a") as config:
            for key, value in _CONFIG:
                section, name = key.split(".")
                config.write(f"[{section}]\n\t{name} = {value}\n")
        exclude = self.git_dir / "info" / "exclude"
        exclude.parent.mkdir(exist_ok=True)
        # What the change check skips too (tools/walk.py's SKIP_DIRS): caches, and
        # environments rebuilt rather than restored.
        lines = [".git/", "__pycache__/", ".mypy_cache/", ".venv/", "node_modules/"]
        # The sessions, when the workspace holds them (`-w .` with the sessions root in
        # it): their journals are never a workspace's files, nor restored over.
        session = self.store.resolve().parent
        for kept in (session, session.parent):
            try:
                inside = kept.relative_to(self.workspace.resolve())
            except ValueError:
                continue
            if inside.parts:
                lines.append(f"/{inside.as_posix()}/")
        exclude.write_text("\n".join(lines) + "\n")
        (self.git_dir / "ready").touch()

    def share_objects_of(self, parent: Path) -> None:
        """Read the checkpoints of the store `parent` (a fork's parent's) as this one's
        own (git alternates): nothing is copied, and the parent's store is only read."""
        alternates = self.git_dir / "objects" / "info" / "alternates"
        alternates.parent.mkdir(parents=True, exist_ok=True)
        alternates.write_text(str((parent / "git" / "objects").resolve()) + "\n")

    def capture(self, paths: Sequence[str] | None = None) -> Capture:
        """Checkpoint the workspace: only `paths` (workspace-relative; the file tools')
        when given, else every file. Returns the tree and what was left out."""
        self.ensure()
        if paths:  # (known to have changed: no need to ask git which did)
            add, drop, left_out = self._sort(paths)
            if add:
                self._add_known(add)
            add = []
        else:
            listed = self.git("ls-files", "-z", "-m", "-d", "-o", "--exclude-standard")
            add, drop, left_out = self._sort(_split(listed))
        if add:
            self.git("update-index", "-z", "--add", "--remove", "--stdin", data=_joined(add))
        if drop:
            self.git("update-index", "-z", "--force-remove", "--stdin", data=_joined(drop))
        tree = self.git("write-tree").decode().strip()
        return Capture(tree, tuple(left_out))

    def _add_known(self, paths: Sequence[str]) -> None:
        """`git add` the paths (a deleted one removed): it refuses those `.gitignore`
        ignores, which is what is wanted, and says so by failing."""
        try:
            self.git("add", "-A", "--", *paths)
        except SessionError as exc:
            if "ignored by one of your .gitignore files" not in str(exc):
                raise

    def _sort(self, candidates: Iterable[str]) -> tuple[list[str], list[str], list[str]]:
        """Which candidates to store (or remove: deleted), which to drop from the index
        (left out: over a cap, or no regular file or link), and the lines saying why."""
        add: list[str] = []
        drop: list[str] = []
        left_out: list[str] = []
        total = 0
        for path in dict.fromkeys(candidates):  # (-m and -d both list a deleted file)
            if path.endswith("/"):  # a repository inside the workspace
                left_out.append(f"{path} (a git repository of its own)")
                continue
            try:
                info = os.lstat(self.workspace / path)
            except FileNotFoundError:
                add.append(path)  # deleted: `--remove` takes it out
                continue
            except OSError as exc:
                left_out.append(f"{path} (unreadable: {exc.strerror})")
                drop.append(path)
                continue
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                drop.append(path)
                continue
            if info.st_size > self.file_cap:
                left_out.append(f"{path} ({_size(info.st_size)}, over {_size(self.file_cap)})")
                drop.append(path)
                continue
            if total + info.st_size > self.checkpoint_cap:
                left_out.append(
                    f"{path} (the checkpoint's {_size(self.checkpoint_cap)} were reached)"
                )
                drop.append(path)
                continue
            total += info.st_size
            add.append(path)
        return add, drop, left_out

    def changes(self, old: str, new: str) -> list[tuple[str, str]]:
        """What making the workspace `new` does to one that is `old`: (A/M/D, path)."""
        out = self.git("diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new)
        parts = _split(out)
        return [(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]

    def restore(self, tree: str) -> None:
        """Make the workspace `tree`: files the index holds and `tree` lacks are removed,
        `tree`'s files written; files the store never held are left alone. Run again after
        a kill, it finishes the job."""
        self.ensure()
        self.workspace.mkdir(parents=True, exist_ok=True)
        # The caller holds the session's lock: a lock file of the index is a killed
        # git's (a restore cut short), which would refuse every later one.
        Path(f"{self.index_file}.lock").unlink(missing_ok=True)
        self.git("read-tree", "-u", "--reset", tree)

    def has(self, tree: str) -> bool:
        try:
            return self.git("cat-file", "-t", tree).strip() == b"tree"
        except SessionError:
            return False


_EMPTY_DIRS = ("refs/heads", "refs/tags", "objects/info", "objects/pack")
"""The directories of a bare git repository that may be empty, and so lost in a copy."""


def available() -> bool:
    """Whether checkpoints can be taken on this machine (git is installed)."""
    return shutil.which("git") is not None


def _git() -> str:
    found = shutil.which("git")
    if found is None:
        raise CheckpointsUnavailable("workspace checkpoints are off: git is not installed")
    return found


def _split(output: bytes) -> list[str]:
    return [os.fsdecode(part) for part in output.split(b"\0") if part]


def _joined(paths: Sequence[str]) -> bytes:
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{n} bytes"
