"""What the command line says when the disk under the sessions refuses a write: one line
(what failed, where, what the session kept, the command that resumes it), exit 5."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from orchestrator.cli.out import command
from orchestrator.cli.parser import EXIT_STORAGE
from orchestrator.errors import StorageFailed
from orchestrator.store.disk import storage_failure
from orchestrator.text import visible


def kept_on_full_disk(run: Callable[[], int], session_id: str, args: argparse.Namespace) -> int:
    """`run()` (a session's run); a disk that refuses a write, found in whatever
    nurseries wrapped it, is said in one line, and the exit code is `EXIT_STORAGE`."""
    try:
        return run()
    except BaseException as exc:
        failure = storage_failure(exc)
        if failure is None:
            raise
        print(visible(disk_full_line(failure, session_id, args)), file=sys.stderr, flush=True)
        return EXIT_STORAGE


def disk_full_line(
    failure: StorageFailed | OSError, session_id: str, args: argparse.Namespace
) -> str:
    """What failed, where, what the session kept, and the command that resumes it."""
    if isinstance(failure, StorageFailed):
        cause, path, kept = failure.cause, str(failure.path), failure.kept_seq
    else:
        cause, path, kept = failure, str(failure.filename or "the session's files"), None
    what = cause.strerror or str(cause)
    kept_part = "every record" if kept is None else f"every record up to seq {kept}"
    return (
        f"error: the disk refused a write ({what}): {path}; the session kept {kept_part} "
        f"in its journal and is resumable: make room, then run: "
        f"{command('resume', session_id, args)}"
    )
