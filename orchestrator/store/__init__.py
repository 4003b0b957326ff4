"""The durable store of a session: journal, snapshots, lock and ids.

Knows files and bytes, not what the records mean: the session layer above it types the
records, folds them into state and decides what to snapshot. The on-disk format is in
docs/session-format.md.
"""

from orchestrator.store.ids import (
    is_session_id,
    new_session_id,
    session_dir,
    session_id_time,
    validate_session_id,
)
from orchestrator.store.journal import Durability, Item, Journal, open_journal
from orchestrator.store.lock import LockHolder, SessionLock, lock_holder
from orchestrator.store.repair import RepairReport, repair_journal
from orchestrator.store.scan import Frame, JournalScan, Parsed, TailCut, scan_journal
from orchestrator.store.snapshot import (
    RejectedSnapshot,
    SnapshotChoice,
    newest_snapshot,
    read_json,
    write_atomic,
    write_json_atomic,
)

__all__ = [
    "Durability",
    "Frame",
    "Item",
    "Journal",
    "JournalScan",
    "LockHolder",
    "Parsed",
    "RejectedSnapshot",
    "RepairReport",
    "SessionLock",
    "SnapshotChoice",
    "TailCut",
    "is_session_id",
    "lock_holder",
    "new_session_id",
    "newest_snapshot",
    "open_journal",
    "read_json",
    "repair_journal",
    "scan_journal",
    "session_dir",
    "session_id_time",
    "validate_session_id",
    "write_atomic",
    "write_json_atomic",
]
