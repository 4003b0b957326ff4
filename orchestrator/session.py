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

import orjson
import trio
from pydantic import BaseModel, ValidationError

from orchestrator.context import FoldError
from orchestrator.errors import JournalCorrupt, SessionError, SessionNotFound
from orchestrator.events import RECORD_ADAPTER, Event, Record, SessionStatus, TurnEnded
from orchestrator.migrations import MIGRATIONS
from orchestrator.state import SessionState, Snapshot
from orchestrator.store import (
    Durability,
    Journal,
    JournalScan,
    SessionLock,
    new_session_id,
    open_journal,
    read_json,
    scan_journal,
    session_dir,
    write_atomic,
    write_json_atomic,
)

FORMAT_VERSION = 2
MANIFEST = "session.json"
JOURNAL = "journal.jsonl"
SNAPSHOT = "snapshot.json"
LOCK = "lock"
SNAPSHOT_EVERY = 2000


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


def decode_records(
    path: Path, lines: Iterable[bytes], first_seq: int
) -> Iterator[tuple[int, Record]]:
    """Journal lines (checked by the store, the first being `first_seq`) as typed records,
    each line parsed and validated in one step; a line that does not fit its kind's
    schema is corruption, named by file and seq."""
    validate = RECORD_ADAPTER.validate_json
    for seq, line in enumerate(lines, first_seq):
        try:
            record = validate(line)
        except ValidationError as exc:
            raise JournalCorrupt(
                f"{path}: record seq {seq} does not match its schema: {_first_error(exc)}",
                path=path,
                line=seq,
                seq=seq,
            ) from exc
        yield seq, record


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def fold_records(state: SessionState, scan: JournalScan, *, snapshot_seq: int = 0) -> None:
    """Fold the scanned records into `state`: records up to `snapshot_seq` rebuild
    contexts only (the small state is the snapshot's), later ones are folded whole."""
    path = scan.path
    apply, apply_context, agents = state.apply, state.apply_context, state.agents
    for seq, record in decode_records(path, scan.lines, scan.after_seq + 1):
        try:
            if seq > snapshot_seq:
                apply(seq, record)
                continue
            # Before the snapshot's seq, only what an agent's live context holds matters
            # (`sessions verify` folds everything from the start).
            agent = agents.get(record.agent)
            if agent is not None and seq >= agent.start:
                apply_context(seq, record)
        except FoldError as exc:
            raise JournalCorrupt(
                f"{path}: record seq {seq}: {exc}", path=path, line=seq, seq=seq
            ) from exc


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
    """The snapshot's small state, then the journal from where the contexts start."""
    return _load(directory, warn)[0]


def read_snapshot(directory: Path, warn: Callable[[str], None]) -> Snapshot | None:
    path = directory / SNAPSHOT
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        warn(f"ignored unreadable snapshot {path}: {exc}; replaying the whole journal")
        return None
    try:
        return Snapshot.model_validate_json(data)
    except ValidationError as exc:
        warn(f"ignored unreadable snapshot {path}: {_first_error(exc)}; replaying the journal")
        return None


def _load(directory: Path, warn: Callable[[str], None]) -> tuple[SessionState, JournalScan]:
    path = directory / JOURNAL
    with gc_paused():
        snapshot = read_snapshot(directory, warn)
        state = SessionState() if snapshot is None else SessionState.from_snapshot(snapshot)
        scan = scan_journal(path, after_seq=state.context_start() - 1)
        if scan.cut is not None:
            warn(f"cut a torn tail from {path}: {scan.cut.describe()}")
        if state.seq > scan.last_seq:
            warn(f"snapshot is ahead of the journal (seq {state.seq} > {scan.last_seq}); replaying")
            state = SessionState()
            scan = scan_journal(path)
        fold_records(state, scan, snapshot_seq=state.seq)
    return state, scan


class MemorySession:
    """A session that folds its records without journaling them: for tests and for
    library users who want the turn loop without a session on disk."""

    def __init__(self, state: SessionState | None = None) -> None:
        self.state = state or SessionState()

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        record = event.record()
        if record is not None:
            self.state.apply(self.state.seq + 1, record)


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
        """The journal sink: persist the event's record, then fold it into state."""
        record = event.record()
        if record is None:
            return
        seq = await self.journal.append(
            record.kind, record.agent, record.journal_body(), durable=durable
        )
        self.state.apply(seq, record)
        self._since_snapshot += 1
        if isinstance(record, TurnEnded) or self._since_snapshot >= SNAPSHOT_EVERY:
            await self.write_snapshot()

    async def write_snapshot(self) -> None:
        """Write the small state. It never grows with the conversation, and it is written
        in a worker thread after the journal holds everything it reflects."""
        await self.journal.flush()
        data = self.state.snapshot().model_dump_json(indent=2).encode() + b"\n"
        self._since_snapshot = 0
        await trio.to_thread.run_sync(write_atomic, self.directory / SNAPSHOT, data)

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
