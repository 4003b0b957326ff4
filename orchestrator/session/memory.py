"""A session kept in memory only: `MemorySession` folds its records as a `LiveSession`
(live.py) does, and writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from orchestrator.state.events import Event
from orchestrator.state.fold import SessionState
from orchestrator.state.manifest import Manifest, SessionStatus, now_stamp
from orchestrator.store import new_session_id


class MemorySession:
    """A session that folds its records without journaling them: for tests, for library
    users who want the turn loop without a session on disk, and for a run that keeps
    nothing (`orc.run(..., in_memory=True)`), which `drive` drives as it drives a
    `LiveSession`. Nothing is written, so nothing can be resumed: it has no `directory`,
    and no `recall` (an agent's history is read back from a journal)."""

    directory: None = None
    recall: None = None

    def __init__(
        self,
        state: SessionState | None = None,
        *,
        manifest: Manifest | None = None,
        warn: Callable[[str], None] = print,
    ) -> None:
        self.state = state or SessionState()
        self.manifest = manifest or memory_manifest(goal="", model="", workspace=Path.cwd())
        self.warn = warn

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def workspace(self) -> Path:
        return Path(self.manifest.workspace)

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        record = event.record()
        if record is not None:
            self.state.apply(self.state.seq + 1, record)

    async def set_status(self, status: SessionStatus, *, output: str | None = None) -> None:
        """The status, just folded, in the manifest (held in memory), with the main
        agent's answer when given."""
        manifest = msgspec.structs.replace(self.manifest, status=status, updated=now_stamp())
        if output is not None:
            manifest = msgspec.structs.replace(manifest, output=output)
        self.manifest = manifest


def memory_manifest(
    *, goal: str, model: str, workspace: Path, now: datetime | None = None
) -> Manifest:
    """What a `MemorySession` is, as a manifest says it of a session on disk; the id is
    made as a session's on disk is, the workspace made absolute."""
    now = now or datetime.now(UTC)
    stamp = now_stamp(now)
    return Manifest(
        id=new_session_id(now),
        goal=goal,
        model=model,
        workspace=str(workspace.resolve()),
        created=stamp,
        updated=stamp,
    )
