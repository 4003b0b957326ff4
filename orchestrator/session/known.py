"""A checkpoint of the paths a file tool wrote, made in-process (session/shadow.py's
`capture` given paths): what `git add` of them and `write-tree` would make, from the
picture of the last checkpoint's tree (session/picture.py): each file's blob and the
trees above it, written as git's loose objects (session/loose.py). No process starts: a
path the last checkpoint did not hold is asked of a `git check-ignore` kept running
(session/ignores.py).

`gather` says when git's path must take it instead (returns None): a path written
otherwise than the tree names it, a directory, a link or a repository of its own on the
way, a tree stored packed, or bytes that `.gitattributes` could make git store otherwise.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from orchestrator.session.loose import EXECUTABLE, FILE, LINK, TREE, object_id, write_object
from orchestrator.session.picture import Change, Picture, Unreadable


class Gathered(msgspec.Struct):
    """What a checkpoint of known paths stores: each file's (mode, bytes), the paths it
    removes, and which files the last checkpoint did not hold (`.gitignore` may refuse
    them, as it refuses `git add`)."""

    blobs: dict[bytes, tuple[bytes, bytes]] = msgspec.field(default_factory=dict)
    removed: list[bytes] = msgspec.field(default_factory=list)
    new: list[str] = msgspec.field(default_factory=list)


def gather(
    picture: Picture, workspace: Path, add: Sequence[str], drop: Sequence[str]
) -> Gathered | None:
    """Read `add` (stored, or removed when gone) and `drop` (left out: removed) against
    the picture; None where git's path must take the checkpoint."""
    if not all(plain_path(path) for path in [*add, *drop]):
        return None
    gathered = Gathered()
    try:
        for path in add:
            name = os.fsencode(path)
            known = picture.entry(name)
            on_the_way = folders(workspace, path)
            if on_the_way is None or (known is not None and known[0] == TREE):
                return None
            if not os.path.lexists(workspace / path):
                if known is not None:  # deleted
                    gathered.removed.append(name)
                continue
            found = _read(workspace, path, picture, on_the_way)
            if found is None:
                return None
            gathered.blobs[name] = found
            if known is None:
                gathered.new.append(path)
        for path in drop:  # (left out: over a cap, or not a file)
            entry = picture.entry(os.fsencode(path))
            if entry is not None and entry[0] == TREE:
                return None
            if entry is not None:
                gathered.removed.append(os.fsencode(path))
    except (Unreadable, OSError):
        return None
    return gathered


def store(
    picture: Picture,
    objects: Path,
    gathered: Gathered,
    ignored: Callable[[Sequence[str]], Sequence[str]],
    level: int,
) -> dict[bytes, Change]:
    """Write what `gathered` holds (but the new files `ignored` names) and the trees above
    it; the picture is then the new tree. The entries that changed."""
    refused = set(map(os.fsencode, ignored(gathered.new))) if gathered.new else set()
    changes: dict[bytes, Change] = dict.fromkeys(gathered.removed)
    for name, (mode, data) in gathered.blobs.items():
        if name in refused:
            continue
        oid = object_id(b"blob", data)
        if picture.entry(name) != (mode, oid):
            write_object(objects, b"blob", data, level, oid)
            changes[name] = (mode, oid)
    if changes:
        picture.apply(changes, level)
    return changes


def _read(
    workspace: Path, path: str, picture: Picture, on_the_way: list[tuple[bytes, bool]]
) -> tuple[bytes, bytes] | None:
    """`path`'s (mode, bytes) as git would store them; None when `.gitattributes` on its
    path could make git store other bytes."""
    where = workspace / path
    info = os.lstat(where)
    if stat.S_ISLNK(info.st_mode):
        return LINK, os.fsencode(os.readlink(where))
    data = where.read_bytes()
    attributes = [workspace / os.fsdecode(f) / ".gitattributes" for f, has in on_the_way if has]
    unread = any(not has and picture.has(f, b".gitattributes") for f, has in on_the_way)
    if converted_on_add(data, attributes, unread):
        return None
    return EXECUTABLE if info.st_mode & stat.S_IXUSR else FILE, data


def plain_path(path: str) -> bool:
    """Whether `path` is written as the tree names it: relative, with no `.`, `..` or
    empty part, and not starting `:` (which `git check-ignore` takes for pathspec magic);
    anything else takes git's path, which says what it makes of it."""
    parts = path.split("/")
    return not path.startswith(":") and all(part not in ("", ".", "..") for part in parts)


def folders(workspace: Path, path: str) -> list[tuple[bytes, bool]] | None:
    """The directories above `path` (b"" the workspace's own, then b"a", b"a/b"), each
    with whether it holds a `.gitattributes`; None when one is not a plain directory (a
    link, not there) or holds a `.git` (a repository of its own): git's path says what it
    makes of those."""
    found: list[tuple[bytes, bool]] = []
    parts = path.split("/")[:-1]
    for depth in range(len(parts) + 1):
        folder = workspace.joinpath(*parts[:depth])
        if depth:
            try:
                if not stat.S_ISDIR(os.lstat(folder).st_mode):
                    return None
            except OSError:
                return None
            if os.path.lexists(folder / ".git"):
                return None
        name = os.fsencode("/".join(parts[:depth]))
        found.append((name, os.path.lexists(folder / ".gitattributes")))
    return found


def converted_on_add(data: bytes, attributes: Sequence[Path], unread: bool) -> bool:
    """Whether git could store `data` as other bytes than these, given the
    `.gitattributes` files on its path (end-of-line conversion touches only a `\\r`,
    `ident` only a `$Id`, and a `working-tree-encoding` anything). `unread`: one is in
    the tree but not in the workspace (git reads the index's then), so not read here."""
    if not attributes and not unread:
        return False
    if unread or b"\r" in data or b"$Id" in data:
        return True
    for path in attributes:
        try:
            if b"encoding" in path.read_bytes():
                return True
        except OSError:
            return True
    return False
