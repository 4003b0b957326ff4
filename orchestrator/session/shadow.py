"""The store of a session's workspace checkpoints: a shadow git repository in the session's
directory (`files/git`, with its own index `files/index`), whose work tree is the
workspace. docs/time-travel.md argues the choice against a store of our own.

A checkpoint is a git tree: `capture` brings the index up to the workspace (what
`git ls-files` finds changed, deleted or new, `.gitignore` honoured, each file within
`FILE_CAP` and the whole within `CHECKPOINT_CAP`) and writes the tree; unchanged files
cost a `stat` each and no read. Given the paths a file tool wrote, it makes the tree
in-process instead (session/picture.py): their blobs and the trees above them, written
as git's loose objects, from a picture of the last checkpoint's tree; the index then
lags on those paths until the next checkpoint by git's path brings it up to date.

`restore` makes the workspace a tree again: files the
index has and the tree lacks are removed, the tree's written; files the store never
held (ignored, over a cap) are left alone. Nothing here reads the user's git
configuration or the workspace's own repository: the store's config is its own, and git
is run with `GIT_CONFIG_GLOBAL` and `GIT_CONFIG_NOSYSTEM` cut off.

Synchronous (subprocesses): callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from orchestrator.errors import SessionError
from orchestrator.session import known
from orchestrator.session.git_paths import CheckpointsUnavailable as CheckpointsUnavailable
from orchestrator.session.git_paths import available as available
from orchestrator.session.git_paths import (
    git_command,
    joined,
    object_dirs,
    size,
    split,
)
from orchestrator.session.ignores import Ignores
from orchestrator.session.picture import Change, Picture, Unreadable
from orchestrator.stamps import stamp_of

STORE = "files"  # in the session's directory
FILE_CAP = 16 * 1024 * 1024
"""Bytes: a larger file is left out of a checkpoint (a restore leaves it alone)."""
CHECKPOINT_CAP = 512 * 1024 * 1024
"""Bytes of new or changed content one checkpoint stores at most; what comes after is
left out of it (named in its record)."""
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
LEVEL = 1  # zlib's, for loose objects (`core.looseCompression` below)
_CONFIG = (
    ("core.bare", "false"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.quotepath", "false"),
    ("core.compression", "1"),  # a checkpoint is read back seldom: speed over size
    ("core.looseCompression", str(LEVEL)),
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "true"),
    ("gc.auto", "0"),  # no tree is reachable from a ref: never collect it
    ("advice.detachedHead", "false"),
)


class Capture(msgspec.Struct, frozen=True):
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
    # The last checkpoint's tree, for one of known paths made in-process; the paths the
    # index lags on, each with its entry in that tree; the index's stat when this object
    # last wrote it (another writer's index means no picture can be trusted).
    _picture: Picture | None = field(default=None, init=False, repr=False)
    _behind: dict[str, Change] = field(default_factory=dict, init=False, repr=False)
    _index_seen: tuple[int, ...] = field(default=(), init=False, repr=False)
    _in_process: bool | None = field(default=None, init=False, repr=False)
    _ignores: Ignores | None = field(default=None, init=False, repr=False)

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

    @property
    def behind_file(self) -> Path:
        """Beside the index: the last checkpoint's tree, while the index lags behind it
        (checkpoints made in-process since it was written); the next process to take
        git's path brings the index up to it."""
        return self.index_file.with_name(self.index_file.name + "-behind")

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

    def git(
        self,
        *args: str,
        data: bytes | None = None,
        tree: bool = True,
        ok: tuple[int, ...] = (0,),
        unset: tuple[str, ...] = (),
    ) -> bytes:
        env = self.env()
        if not tree:  # (git init refuses a work tree)
            unset = (*unset, "GIT_WORK_TREE", "GIT_DIR")
        if unset:
            env = {k: v for k, v in env.items() if k not in unset}
        try:
            done = subprocess.run(
                [git_command(), *args],
                input=data,
                capture_output=True,
                env=env,
                cwd=self.workspace if self.workspace.is_dir() else self.store,
                check=False,
            )
        except OSError as exc:
            raise CheckpointsUnavailable(f"cannot run git: {exc}") from exc
        if done.returncode not in ok:
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
        if paths:
            known = self._known(paths)
            if known is not None:
                return known
        self._catch_up()
        if paths:  # (known to have changed: no need to ask git which did)
            add, drop, left_out = self._sort(paths)
            if add:
                self._add_known(add)
            add = []
        else:
            listed = self.git("ls-files", "-z", "-m", "-d", "-o", "--exclude-standard")
            add, drop, left_out = self._sort(split(listed))
        if add:
            self.git("update-index", "-z", "--add", "--remove", "--stdin", data=joined(add))
        if drop:
            self.git("update-index", "-z", "--force-remove", "--stdin", data=joined(drop))
        tree = self.git("write-tree").decode().strip()
        self._taken(tree)
        return Capture(tree, tuple(left_out))

    def _known(self, paths: Sequence[str]) -> Capture | None:
        """The checkpoint of `paths` made in-process (session/known.py), or None where
        git's path must take it: no picture yet, an index another writer changed, a
        `.gitignore` or `.gitattributes` written, what `known.gather` refuses."""
        picture = self._picture
        if picture is None or stamp_of(self.index_file) != self._index_seen:
            return None
        if not self._store_plain() or any(p.rpartition("/")[2] in _GIT_FILES for p in paths):
            return None
        add, drop, left_out = self._sort(paths)
        gathered = known.gather(picture, self.workspace, add, drop)
        if gathered is None:
            return None
        try:
            changes = known.store(picture, self.git_dir / "objects", gathered, self._ignored, LEVEL)
            if changes:
                self.behind_file.write_text(picture.root + "\n")
        except Unreadable:  # (what `gather` read it could not: git's path then)
            self._picture = None
            return None
        except OSError as exc:
            self._picture = None  # (half changed)
            raise SessionError(f"cannot write a checkpoint into {self.git_dir}: {exc}") from exc
        self._behind.update((os.fsdecode(name), entry) for name, entry in changes.items())
        return Capture(picture.root, tuple(left_out))

    def _ignored(self, paths: Sequence[str]) -> list[str]:
        """Which of `paths` (none of them in the last checkpoint) `.gitignore` ignores, as
        git reads it: asked of a `git check-ignore` kept running (session/ignores.py),
        else of one run for them. (It takes no literal pathspecs, which changes nothing
        but for a name starting `:`: none comes here.)"""
        if self._ignores is None:
            env = {k: v for k, v in self.env().items() if k != "GIT_LITERAL_PATHSPECS"}
            exclude = self.git_dir / "info" / "exclude"
            self._ignores = Ignores([git_command()], env, self.workspace, exclude)
        found = self._ignores.ignored(paths)
        if found is not None:
            return found
        args = ("check-ignore", "--no-index", "-z", "--stdin")
        out = self.git(*args, data=joined(paths), ok=(0, 1), unset=("GIT_LITERAL_PATHSPECS",))
        return split(out)

    def _catch_up(self) -> None:
        """Before git's path: bring the index up to the last checkpoint where checkpoints
        were made in-process since it was written: each path it lags on set to its entry
        there (a file whose stat it then lacks is compared by content, once); or, after a
        process that ended before doing so, the whole index read from that tree, keeping
        the stat of every entry that did not change."""
        behind = self.behind_file
        if self._behind:
            lines = [
                (b"0 " + b"0" * 40 if entry is None else entry[0] + b" " + entry[1].hex().encode())
                + b"\t"
                + os.fsencode(path)
                + b"\0"
                for path, entry in self._behind.items()
            ]
            self.git("update-index", "-z", "--index-info", data=b"".join(lines))
            self._behind.clear()
        elif behind.exists():
            # (its tree lost with a crash: the scan after finds what is there)
            with contextlib.suppress(SessionError):  # (`-m` would refuse what changed)
                self.git("read-tree", "--reset", behind.read_text().strip())
        behind.unlink(missing_ok=True)

    def _taken(self, tree: str) -> None:
        """The index now holds `tree` (a checkpoint by git's path, a restore)."""
        if self._picture is None or self._picture.root != tree:
            self._picture = Picture(object_dirs(self.git_dir / "objects"), tree)
        self._index_seen = stamp_of(self.index_file)

    def _store_plain(self) -> bool:
        """Whether the store's configuration is the one `ensure` writes in what a
        checkpoint in-process depends on (file modes, links, attributes, excludes)."""
        if self._in_process is None:
            config = (self.git_dir / "config").read_text(errors="replace")
            said = config.lower().replace(" ", "").replace("\t", "")
            self._in_process = (
                not any(w in said for w in _NOT_IN_PROCESS)
                and not (self.git_dir / "info" / "attributes").exists()
            )
        return self._in_process

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
                left_out.append(f"{path} ({size(info.st_size)}, over {size(self.file_cap)})")
                drop.append(path)
                continue
            if total + info.st_size > self.checkpoint_cap:
                left_out.append(
                    f"{path} (the checkpoint's {size(self.checkpoint_cap)} were reached)"
                )
                drop.append(path)
                continue
            total += info.st_size
            add.append(path)
        return add, drop, left_out

    def changes(self, old: str, new: str) -> list[tuple[str, str]]:
        """What making the workspace `new` does to one that is `old`: (A/M/D, path)."""
        out = self.git("diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new)
        parts = split(out)
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
        self._catch_up()  # (so that it removes what checkpoints in-process added)
        self.git("read-tree", "-u", "--reset", tree)
        self._taken(tree)

    def has(self, tree: str) -> bool:
        try:
            return self.git("cat-file", "-t", tree).strip() == b"tree"
        except SessionError:
            return False


_GIT_FILES = (".gitignore", ".gitattributes")
"""Files that change what git makes of others: one written takes git's path."""
_NOT_IN_PROCESS = (
    "filemode=false",
    "symlinks=false",
    "ignorecase=true",
    "precomposeunicode=true",
    "autocrlf=true",
    "autocrlf=input",
    "attributesfile",
    "excludesfile",
)
"""Store settings under which git stores a file otherwise than a checkpoint in-process
would (none is ever written by `ensure`)."""
_EMPTY_DIRS = ("refs/heads", "refs/tags", "objects/info", "objects/pack")
"""The directories of a bare git repository that may be empty, and so lost in a copy."""
