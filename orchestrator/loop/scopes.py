"""Write scopes: which workspace-relative paths a task may write (paths or glob patterns),
and whether two scopes may name the same file. One rule for the task registry (scope
conflicts between live tasks, writes refused outside a scope) and for plans (tasks that
must run one after the other).
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Iterable


def scopes_overlap(a: Iterable[str], b: Iterable[str]) -> bool:
    """Whether two write scopes (workspace-relative paths or glob patterns) may name the
    same file: equal, one under the other, or one pattern matching the other."""
    for x in a:
        for y in b:
            if _overlap(_norm(x), _norm(y)):
                return True
    return False


def _norm(path: str) -> str:
    """A workspace-relative path in one spelling: `a/./b/../c/` is `a/c`; a path that
    climbs out of the workspace stays `../...` and so is inside no scope but `..`."""
    path = posixpath.normpath(path.strip() or ".")
    return path.removeprefix("/") if path.startswith("/") else path


def _overlap(x: str, y: str) -> bool:
    if x == "." or y == "." or x == y:
        return True
    if x.startswith(y + "/") or y.startswith(x + "/"):
        return True
    if fnmatch.fnmatchcase(x, y) or fnmatch.fnmatchcase(y, x):
        return True
    # Patterns on both sides: compare the literal parts before the first wildcard.
    px, py = _literal_prefix(x), _literal_prefix(y)
    magic = _has_magic(x) or _has_magic(y)
    return magic and (px.startswith(py) or py.startswith(px))


def _has_magic(path: str) -> bool:
    return any(c in path for c in "*?[")


def _literal_prefix(path: str) -> str:
    for i, c in enumerate(path):
        if c in "*?[":
            return path[:i]
    return path


def in_scope(path: str, scope: Iterable[str] | None) -> bool:
    """Whether a workspace-relative `path` is inside a write scope."""
    if scope is None:
        return True
    path = _norm(path)
    if path == ".." or path.startswith("../"):
        return False
    for entry in scope:
        entry = _norm(entry)
        if entry == "." or path == entry or path.startswith(entry + "/"):
            return True
        if fnmatch.fnmatchcase(path, entry):
            return True
    return False
