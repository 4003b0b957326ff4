"""The workspace root every file tool is confined to, and the write scope a task's file
tools are confined to within it.

A path is checked on where it resolves, not on how it is written: `resolve` follows every
symlink and `..` first. And a file tool opens what was checked, not the path again: it
walks from a descriptor of the root to the resolved path's directory one component at a
time, never following a symlink (`directory`), then opens or renames the last component
relative to that directory's descriptor, again never following a symlink. So a symlink
put in the path between the check and the open (by a shell command running meanwhile)
makes the call fail; it cannot lead the write anywhere else.

A name that is not UTF-8 is shown escaped (`bad\\xff.txt`, `text.escaped`), in a result,
an error or a record alike; a path written so is taken back to the name it stands for when
no file has the name as written (`resolve`)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import msgspec

from orchestrator.errors import ScopeEscape, ToolFailed, WorkspaceEscape
from orchestrator.state.tasks import in_scope
from orchestrator.text import escaped, unescaped

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Target(msgspec.Struct, frozen=True):
    """A path inside the workspace after resolution: its components under the root, none
    of them a symlink, `.` or `..` when it was resolved; `shown` is how it was written."""

    parts: tuple[str, ...]
    shown: str

    @property
    def rel(self) -> str:
        """The resolved path, relative to the root, as scopes and results name it (a name
        that is not UTF-8 escaped)."""
        return escaped("/".join(self.parts)) or "."

    @property
    def parent(self) -> tuple[str, ...]:
        return self.parts[:-1]

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else "."


class Workspace:
    """A directory tree tools may touch. `resolve` is the one gate every path goes through:
    `..`, absolute paths outside the root and symlinks that lead out are refused."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def resolve(self, path: str) -> Path:
        if "\x00" in path:
            raise WorkspaceEscape(f"path {path!r} contains a NUL byte")
        candidate = Path(path)
        joined = candidate if candidate.is_absolute() else self.root / candidate
        if "\\x" in path and not os.path.lexists(joined):
            # A name shown escaped (`bad\xff.txt`): the name it stands for, if there is one.
            raw = Path(unescaped(path))
            raw = raw if raw.is_absolute() else self.root / raw
            if os.path.lexists(raw):
                joined = raw
        # resolve() follows every symlink that exists, so a link inside the workspace that
        # points outside it is caught here, as is any `..` that climbs above the root.
        try:
            resolved = joined.resolve()
        except RuntimeError:  # Python 3.11's word for a symlink loop
            raise ToolFailed(f"{path}: a symlink loop") from None
        if resolved != self.root and not resolved.is_relative_to(self.root):
            raise WorkspaceEscape(
                f"path {path!r} is outside the workspace {escaped(str(self.root))} "
                f"(resolves to {escaped(str(resolved))})"
            )
        return resolved

    def relative(self, path: Path) -> str:
        """How a resolved path inside the workspace is shown to the model."""
        rel = path.relative_to(self.root)
        return rel.as_posix() if rel.parts else "."

    def target(self, path: str) -> Target:
        """`path` resolved inside the workspace (else `WorkspaceEscape`)."""
        return Target(self.resolve(path).relative_to(self.root).parts, path)

    def writable(self, path: str, scope: Iterable[str] | None) -> Target:
        """`path` resolved inside the workspace and inside `scope` (None: anywhere), else
        `WorkspaceEscape` or `ScopeEscape`, which says where a path written inside the
        scope leads when it resolves elsewhere."""
        target = self.target(path)
        if scope is None or in_scope(target.rel, scope):
            return target
        scope = tuple(scope)
        shown = ", ".join(scope) or "nothing"
        if in_scope(path, scope):
            raise ScopeEscape(
                f"{path} resolves to {target.rel}, outside this task's write scope ({shown})",
                written=path,
                resolved=target.rel,
            )
        raise ScopeEscape(
            f"{path} is outside this task's write scope ({shown})", written=path, resolved=""
        )

    @contextlib.contextmanager
    def directory(self, parts: Sequence[str], *, create: bool = False) -> Iterator[int]:
        """A descriptor of the directory `parts` under the root, reached one component at a
        time from a descriptor of the root without following a symlink (a component that
        is one, or is not a directory, is refused); missing ones are made when `create`."""
        for name in parts:
            if name in ("", ".", "..") or "/" in name:
                raise WorkspaceEscape(f"{escaped(name)!r} is not a plain path component")
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for depth, name in enumerate(parts):
                child = _open_dir(fd, name, create, escaped("/".join(parts[: depth + 1])))
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)


def _open_dir(parent: int, name: str, create: bool, shown: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise ToolFailed(f"{shown}: no such directory") from None
    except OSError as exc:
        raise not_followed(parent, name, shown, exc) from None
    with contextlib.suppress(FileExistsError):  # made meanwhile: opened (and checked) below
        os.mkdir(name, 0o777, dir_fd=parent)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        raise not_followed(parent, name, shown, exc) from None


def not_followed(parent: int, name: str, shown: str, exc: OSError) -> ToolFailed:
    """The error for `name` in `parent` that an open refused: a symlink where the checked
    path had none (it changed after the check), or what else it is."""
    try:
        mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except OSError:
        mode = 0
    if stat.S_ISLNK(mode) or exc.errno == errno.ELOOP:
        return ToolFailed(
            f"{shown} is a symlink, which was not there when the path was checked "
            "(something changed it meanwhile); refused"
        )
    if exc.errno == errno.ENOTDIR:
        return ToolFailed(f"{shown} is not a directory")
    return ToolFailed(f"{shown}: {exc.strerror}")
