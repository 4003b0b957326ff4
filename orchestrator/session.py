"""A session on disk: its manifest, its lock, its journal and its snapshot.

`create_session` makes the directory; `open_session` takes the lock, rebuilds the state
from the newest snapshot plus the journal after it, and yields a `LiveSession` whose
`sink` journals every persistent event and applies it to `state`.
"""

from __future__ import annotations

import contextlib
import gc
import shutil
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import trio
from pydantic import BaseModel, ValidationError

from orchestrator.errors import JournalCorrupt, SessionError, SessionNotFound
from orchestrator.events import EVENT_ADAPTER, Event, SessionStatus, TurnEnded
from orchestrator.state import SessionState
from orchestrator.store import (
    Durability,
    Frame,
    Journal,
    JournalScan,
    SessionLock,
    new_session_id,
    open_journal,
    read_json,
    scan_journal,
    session_dir,
    write_json_atomic,
)

FORMAT_VERSION = 1
MANIFEST = "session.json"
JOURNAL = "journal.jsonl"
SNAPSHOT = "snapshot.json"
LOCK = "lock"
SNAPSHOT_EVERY = 2000

Migration = Callable[[Path], None]
MIGRATIONS: dict[int, Migration] = {}
"""`MIGRATIONS[n]` rewrites a session directory of format n into format n + 1. Each one is
kept forever, with the recorded session of its old format under `sessions/` as its test."""


class Manifest(BaseModel):
    id: str
    format_version: int = FORMAT_VERSION
    goal: str
    model: str
    workspace: str
    created: str
    updated: str
    status: SessionStatus = "running"

    def workspace_path(self, directory: Path) -> Path:
        """The workspace; a relative one lives inside the session directory."""
        path = Path(self.workspace)
        return path if path.is_absolute() else directory / path

    def model_spec(self, directory: Path) -> str:
        """The model spec, with a scripted model's relative path taken from the session."""
        prefix, _, rest = self.model.partition(":")
        if prefix == "scripted" and not Path(rest).is_absolute():
            return f"scripted:{directory / rest}"
        return self.model


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST
    if not directory.is_dir():
        raise SessionNotFound(f"no session {directory.name!r} under {directory.parent}")
    if not path.exists():
        raise SessionNotFound(f"no session at {directory} (no {MANIFEST})")
    try:
        manifest = Manifest.model_validate(read_json(path))
    except (ValidationError, orjson.JSONDecodeError) as exc:
        raise JournalCorrupt(f"{path}: not a valid session manifest: {exc}") from exc
    if manifest.format_version > FORMAT_VERSION:
        raise SessionError(
            f"{path}: session format {manifest.format_version} was written by a newer "
            f"orchestrator; this one reads formats up to {FORMAT_VERSION}"
        )
    return manifest


def migrate(directory: Path, manifest: Manifest) -> Manifest:
    """Bring an older session up to `FORMAT_VERSION`, one recorded step at a time."""
    while manifest.format_version < FORMAT_VERSION:
        step = MIGRATIONS.get(manifest.format_version)
        if step is None:
            raise SessionError(
                f"{directory}: no migration from session format {manifest.format_version}"
            )
        step(directory)
        manifest = manifest.model_copy(update={"format_version": manifest.format_version + 1})
        write_manifest(directory, manifest)
    return manifest


def write_manifest(directory: Path, manifest: Manifest) -> None:
    write_json_atomic(directory / MANIFEST, manifest.model_dump(mode="json"))


def create_session(
    root: Path,
    *,
    goal: str,
    model: str,
    workspace: Path | None,
    now: datetime | None = None,
) -> tuple[str, Path]:
    """Make a new session directory. A scripted model's script is copied in, and with
    `workspace=None` the workspace is `workspace/` inside the session: such a session is
    relocatable (copy it under any sessions root and resume it)."""
    session_id = new_session_id(now or datetime.now(UTC))
    directory = session_dir(root, session_id)
    directory.mkdir(parents=True)
    prefix, _, rest = model.partition(":")
    if prefix == "scripted":
        shutil.copyfile(rest, directory / "script.json")
        model = "scripted:script.json"
    if workspace is None:
        (directory / "workspace").mkdir()
        shown = "workspace"
    else:
        shown = str(workspace.resolve())
    stamp = _now()
    write_manifest(
        directory,
        Manifest(
            id=session_id, goal=goal, model=model, workspace=shown, created=stamp, updated=stamp
        ),
    )
    return session_id, directory


def decode(kind: str, agent: str, body: dict[str, Any]) -> Event:
    return EVENT_ADAPTER.validate_python({**body, "kind": kind, "agent": agent})


def events_of(path: Path, frames: Iterable[Frame]) -> Iterator[tuple[int, Event]]:
    """The journal's frames as typed events; a body that does not fit its kind's schema
    is corruption, named by file and seq."""
    for frame in frames:
        try:
            event = decode(frame.kind, frame.agent, frame.body)
        except ValidationError as exc:
            raise JournalCorrupt(
                f"{path}: record seq {frame.seq} ({frame.kind}) does not match "
                f"its schema: {exc.errors()[0]['msg']}"
            ) from exc
        yield frame.seq, event


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Folding builds hundreds of thousands of small objects and no cycles; the cyclic
    garbage collector would rescan them all on every generation-2 pass (5x slower)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_state(directory: Path, *, warn: Callable[[str], None]) -> SessionState:
    """The newest valid snapshot, then the journal after it."""
    return _load(directory, warn)[0]


def _load_snapshot(directory: Path, warn: Callable[[str], None]) -> SessionState:
    path = directory / SNAPSHOT
    if not path.exists():
        return SessionState()
    try:
        return SessionState.model_validate_json(path.read_bytes())
    except (ValidationError, OSError) as exc:
        reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        warn(f"ignored unreadable snapshot {path}: {reason}; replaying the whole journal")
        return SessionState()


def _load(directory: Path, warn: Callable[[str], None]) -> tuple[SessionState, JournalScan]:
    path = directory / JOURNAL
    with gc_paused():
        state = _load_snapshot(directory, warn)
        scan = scan_journal(path, after_seq=state.seq)
        if scan.cut is not None:
            warn(f"cut a torn tail from {path}: {scan.cut.describe()}")
        if state.seq > scan.last_seq:
            warn(f"snapshot is ahead of the journal (seq {state.seq} > {scan.last_seq}); replaying")
            state = SessionState()
            scan = scan_journal(path)
        for seq, event in events_of(path, scan.records):
            state.apply(seq, event)
    return state, scan


@dataclass
class LiveSession:
    """An open session: the one process allowed to write it."""

    id: str
    directory: Path
    manifest: Manifest
    state: SessionState
    journal: Journal
    _since_snapshot: int = field(default=0)

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        """The journal sink: persist, then fold into state."""
        if not event.persist:
            return
        body = event.model_dump(mode="json", exclude={"kind", "agent"})
        seq = await self.journal.append(event.kind, event.agent, body, durable=durable)
        self.state.apply(seq, event)
        self._since_snapshot += 1
        if isinstance(event, TurnEnded) or self._since_snapshot >= SNAPSHOT_EVERY:
            await self.write_snapshot()

    async def write_snapshot(self) -> None:
        # The journal must hold everything the snapshot reflects before the snapshot exists.
        await self.journal.flush()
        data = self.state.snapshot()
        self._since_snapshot = 0
        await trio.to_thread.run_sync(write_json_atomic, self.directory / SNAPSHOT, data)

    async def set_status(self, status: SessionStatus) -> None:
        self.manifest = self.manifest.model_copy(update={"status": status, "updated": _now()})
        await trio.to_thread.run_sync(write_manifest, self.directory, self.manifest)


@asynccontextmanager
async def open_session(
    root: Path,
    session_id: str,
    *,
    durability: Durability = Durability.BATCH,
    warn: Callable[[str], None],
) -> AsyncIterator[LiveSession]:
    directory = session_dir(root, session_id)
    if not directory.is_dir():
        raise SessionNotFound(f"no session {session_id!r} under {root}")
    with SessionLock(directory / LOCK):
        manifest = migrate(directory, read_manifest(directory))
        state, scan = await trio.to_thread.run_sync(_load, directory, warn)
        # Handing over the scan saves checking the whole file a second time.
        async with open_journal(directory / JOURNAL, durability=durability, scan=scan) as journal:
            live = LiveSession(session_id, directory, manifest, state, journal)
            try:
                yield live
            finally:
                # A snapshot is only a shortcut: if the journal has failed, its own error
                # (raised as it closes) is the one to see, not this one.
                with (
                    trio.CancelScope(shield=True),
                    trio.move_on_after(10),
                    contextlib.suppress(SessionError),
                ):
                    await live.write_snapshot()
