"""A session's status as people see it. Light to import, for `sessions list`."""

from __future__ import annotations

from pathlib import Path

from orchestrator.layout import LOCK
from orchestrator.store.lock import lock_holder


def shown_status(directory: Path, status: str) -> str:
    """`status` as written, but a `running` session that no process holds is stopped."""
    if status == "running" and lock_holder(directory / LOCK) is None:
        return "stopped (resumable)"
    return status
