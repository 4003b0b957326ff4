"""The picture of a session's last checkpoint tree that a checkpoint of known paths is made
from in-process (session/shadow.py's `capture` with the paths a file tool wrote): each
directory's entries, read from the store's loose tree objects when first needed, and
`apply`, which writes the changed paths' trees (session/loose.py) and gives the new tree.

The picture is of a tree, not of the workspace: what a shell command changed meanwhile is
not in it, exactly as it is not in git's index until a scan adds it; so it never goes
stale, and is replaced whenever a checkpoint is taken by git's path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from orchestrator.errors import OrchestratorError
from orchestrator.session.loose import TREE, Entries, read_tree, tree_bytes, write_object

Change = tuple[bytes, bytes] | None
"""A path's new entry, (mode, binary id), or None: removed."""


class Unreadable(OrchestratorError):
    """The picture cannot say: a tree not stored loose, or a file where a path needs a
    directory. The checkpoint takes git's path instead (it never reaches a caller)."""


class Picture:
    """The tree `root` (hex), read a directory at a time."""

    def __init__(self, objects: Sequence[Path], root: str) -> None:
        self.objects = objects  # the store's own first, then a fork's parents'
        self._dirs: dict[bytes, Entries] = {}  # b"" is the top, b"a/b" a directory
        self._root_id = bytes.fromhex(root)

    @property
    def root(self) -> str:
        return self._root_id.hex()

    def entry(self, path: bytes) -> tuple[bytes, bytes] | None:
        """The tree's entry for `path` (b"a/b.txt"), or None when it has none."""
        folder, _, name = path.rpartition(b"/")
        entries = self._directory(folder, create=False)
        return None if entries is None else entries.get(name)

    def has(self, folder: bytes, name: bytes) -> bool:
        entries = self._directory(folder, create=False)
        return entries is not None and name in entries

    def apply(self, changes: Mapping[bytes, Change], level: int) -> str:
        """Make the tree the picture's with `changes`: each changed directory's tree
        written, deepest first, up to the top. The new tree's id (hex)."""
        touched: set[bytes] = {b""}
        for path, change in changes.items():
            folder, _, name = path.rpartition(b"/")
            entries = self._directory(folder, create=change is not None)
            if entries is None:  # (removing what the tree does not have)
                continue
            if change is None:
                entries.pop(name, None)
            else:
                entries[name] = change
            while folder:
                touched.add(folder)
                folder = folder.rpartition(b"/")[0]
        objects = self.objects[0]
        for folder in sorted(touched, key=lambda f: -f.count(b"/") - (f != b"")):
            entries = self._dirs[folder]
            if not folder:
                self._root_id = write_object(objects, b"tree", tree_bytes(entries), level)
                break
            parent, _, name = folder.rpartition(b"/")
            if entries:  # (git keeps no empty directory)
                oid = write_object(objects, b"tree", tree_bytes(entries), level)
                self._dirs[parent][name] = (TREE, oid)
            else:
                self._dirs[parent].pop(name, None)
                del self._dirs[folder]
        return self.root

    def _directory(self, folder: bytes, create: bool) -> Entries | None:
        found = self._dirs.get(folder)
        if found is not None:
            return found
        if not folder:
            entries = read_tree(self.objects, self._root_id)
            if entries is None:
                raise Unreadable("the tree is not stored loose")
            self._dirs[folder] = entries
            return entries
        parent, _, name = folder.rpartition(b"/")
        above = self._directory(parent, create)
        if above is None:
            return None
        entry = above.get(name)
        if entry is None:
            if not create:
                return None
            made: Entries = {}
            self._dirs[folder] = made
            return made
        if entry[0] != TREE:
            raise Unreadable(f"{os.fsdecode(folder)} is not a directory in the tree")
        entries = read_tree(self.objects, entry[1])
        if entries is None:
            raise Unreadable(f"the tree of {os.fsdecode(folder)} is not stored loose")
        self._dirs[folder] = entries
        return entries
