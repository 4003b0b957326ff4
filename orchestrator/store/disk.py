"""Telling a disk that refuses writes from other failures, wherever the error went.

A full disk (or a quota, a file too large, a read-only or failing file system) is not a
bug to show as a traceback: the session keeps what its journal holds and resumes once
the disk takes writes again. Such an error reaches the command line wrapped in nurseries'
exception groups, or as the cause of the session's own error; `storage_failure` finds it.
"""

from __future__ import annotations

import errno

from orchestrator.errors import StorageFailed

DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})
"""The errors of a disk that refuses writes: no space, over quota, a file too large, an
I/O error, a read-only file system."""


def is_disk_error(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in DISK_ERRNOS


def storage_failure(exc: BaseException) -> StorageFailed | OSError | None:
    """The disk's refusal inside `exc`: a `StorageFailed` (which says what the journal
    kept) if there is one, else a bare `OSError` of the disk, looked for through
    exception groups, causes and contexts, at any depth; None if there is neither."""
    found: OSError | None = None
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, StorageFailed):
            return current
        if found is None and isinstance(current, OSError) and is_disk_error(current):
            found = current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return found
