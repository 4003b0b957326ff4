"""A session's status as people see it, read through to the journal. Light to import,
for `sessions list`.

The journal is the truth; the manifest (`session.json`) mirrors its last status so that
listing sessions reads no journal. A kill between the journal's status record and the
manifest's rewrite leaves the mirror behind, so the manifest also says how far into the
journal it has seen (`journal_seq`, `journal_size`): a journal of that length holds
nothing newer, and a longer one is read from that point on (backwards, stopping at its
last status record) for a later status. Whoever can take the session's lock then writes
what it found back into the manifest (`mirror`) and removes the temporary files a kill
left; whoever cannot (the session is live, or another command holds it) only reads.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

import msgspec

from orchestrator.errors import SessionLocked
from orchestrator.layout import FORMAT_VERSION, JOURNAL, LOCK, TASKS_DIR, TODOS_DIR
from orchestrator.store.lock import SessionLock, lock_holder

STATUS_KIND = "session_status"
"""The kind of `state.events.SessionStatusChanged`'s record (not imported: that would
bring every record type into `sessions list`)."""

_TEMP = re.compile(r"\..+\.[0-9a-f]{8}\.tmp")  # store.snapshot.write_atomic's temp names


class JournalStatus(msgspec.Struct, frozen=True):
    """The session's last status as its journal has it, the journal's last seq and
    length in bytes there, and when that status was recorded (None: as the manifest says)."""

    status: str
    seq: int
    size: int
    updated: str | None = None

    def differs(self, fields: dict[str, Any]) -> bool:
        """Whether the manifest's `fields` lag behind this."""
        mirrored = (
            fields.get("status"),
            fields.get("journal_seq", 0),
            fields.get("journal_size", 0),
        )
        return mirrored != (self.status, self.seq, self.size)


ShownStatus = Literal[
    "running",
    "stopped (resumable)",
    "completed",
    "failed",
    "interrupted",
    "blocked",
    "budget_exhausted",
]
"""A session's status as `sessions list` and `show` show it: the journal's, but `stopped
(resumable)` for a `running` session whose process is gone (killed)."""

STOPPED: ShownStatus = "stopped (resumable)"


def shown_status(directory: Path, status: str) -> ShownStatus:
    """`status` as written, but a `running` session that no process holds is stopped."""
    if status == "running" and lock_holder(directory / LOCK) is None:
        return STOPPED
    return cast("ShownStatus", status)  # (one of the manifest's statuses)


def resumable(directory: Path, shown: str) -> bool:
    """Whether a resume of the session would run something now: it has not completed
    (a resume of a completed session says "already finished" unless given a message),
    and no process holds it (a `running` session is shown so only while one does)."""
    if shown in ("completed", "running"):
        return False
    return lock_holder(directory / LOCK) is None


def journal_status(directory: Path, fields: dict[str, Any]) -> JournalStatus:
    """The journal's last status, given the manifest's `fields`: the manifest's own when
    the journal holds nothing past what it has seen; else read from the journal's end.
    A session of an older format is taken at its manifest's word (its journal's records
    are framed otherwise until a command that writes migrates it)."""
    seq, size = fields.get("journal_seq", 0), fields.get("journal_size", 0)
    status = str(fields.get("status", "running"))
    if fields.get("format_version") != FORMAT_VERSION:
        return JournalStatus(status, seq, size)
    path = directory / JOURNAL
    try:
        length = path.stat().st_size
    except FileNotFoundError:
        length = 0
    if size and length == size:
        return JournalStatus(status, seq, size)
    from orchestrator.store.tail import read_tail  # (only here: the common case needs none)

    try:
        tail = read_tail(path, STATUS_KIND, since_seq=seq, since_offset=size) if size else None
        if tail is None:  # not the journal the manifest saw: read it from the start
            seq, tail = 0, read_tail(path, STATUS_KIND)
    except OSError:
        return JournalStatus(status, seq, size)
    if tail is None:
        return JournalStatus(status, seq, size)
    if tail.found is None:  # no status after the manifest's point: the manifest's stands
        return JournalStatus(status, tail.last_seq, tail.end_offset)
    when = datetime.fromtimestamp(tail.found["t"] / 1000, UTC).isoformat(timespec="seconds")
    return JournalStatus(str(tail.found["status"]), tail.last_seq, tail.end_offset, when)


def current_status(directory: Path, fields: dict[str, Any]) -> ShownStatus:
    """The status to show for a session whose manifest holds `fields`: the journal's.
    A manifest found behind is brought up to date if the session's lock is free (a
    moment's hold: a resume started in that very moment is told the session is in use)."""
    found = journal_status(directory, fields)
    behind = found.differs(fields) or any(_TEMP.fullmatch(p.name) for p in directory.iterdir())
    if behind and lock_holder(directory / LOCK) is None:
        try:
            with SessionLock(directory / LOCK):
                found = reconcile(directory)
        except (SessionLocked, OSError):
            pass  # live after all, or a disk that takes no writes: shown, not written
    return shown_status(directory, found.status)


def reconcile(directory: Path) -> JournalStatus:
    """Bring the manifest up to the journal, and remove what killed writes left; the
    caller holds the session's lock. Raises `OSError` when the manifest cannot be
    written (the journal still says it all)."""
    from orchestrator.state.manifest import read_manifest

    manifest = read_manifest(directory)
    found = journal_status(directory, _fields(manifest))
    mirror(directory, found, manifest)
    return found


def mirror(directory: Path, found: JournalStatus, manifest: Any) -> Any:
    """Write `found` into the `manifest` where it differs (the caller holds the lock and
    knows `found` from the journal), and remove temporary files left by killed writes:
    the manifest's, the snapshot's and the views' (never the workspace's). Returns the
    manifest as it now stands."""
    import msgspec

    from orchestrator.state.manifest import write_manifest

    remove_temporary_files(directory)
    if found.seq < manifest.journal_seq or not found.differs(_fields(manifest)):
        return manifest  # (a journal shorter than the manifest's mark: resume refuses it)
    update: dict[str, Any] = {
        "status": found.status,
        "journal_seq": found.seq,
        "journal_size": found.size,
    }
    if found.updated is not None:
        update["updated"] = found.updated
    manifest = msgspec.structs.replace(manifest, **update)
    write_manifest(directory, manifest, sync=False)
    return manifest


def remove_temporary_files(directory: Path) -> list[Path]:
    """Remove the `.<name>.<random>.tmp` files that a killed atomic write leaves, in the
    session directory and its views' directories; the caller holds the lock."""
    removed = []
    for place in (directory, directory / TASKS_DIR, directory / TODOS_DIR):
        try:
            names = [entry.name for entry in place.iterdir()]
        except (FileNotFoundError, NotADirectoryError):
            continue
        for name in names:
            if _TEMP.fullmatch(name) and (place / name).is_file():
                (place / name).unlink(missing_ok=True)
                removed.append(place / name)
    return removed


def _fields(manifest: Any) -> dict[str, Any]:
    return {
        "format_version": manifest.format_version,
        "status": manifest.status,
        "journal_seq": manifest.journal_seq,
        "journal_size": manifest.journal_size,
    }
