"""The durable store of a session: journal, snapshots, lock and ids.

Knows files and bytes, not what the records mean: the session layer above it types the
records, folds them into state and decides what to snapshot. The on-disk format is in
docs/session-format.md.

Names load on first use, so a command that only needs ids, locks or manifests does not
import the journal writer (and trio).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.store.ids import (
        is_session_id,
        new_session_id,
        session_dir,
        session_id_time,
        validate_session_id,
    )
    from orchestrator.store.journal import Durability, Item, Journal
    from orchestrator.store.lock import LockHolder, SessionLock, lock_holder
    from orchestrator.store.opening import open_journal
    from orchestrator.store.repair import RepairReport, repair_journal
    from orchestrator.store.scan import (
        Frame,
        JournalMark,
        JournalScan,
        Parsed,
        TailCut,
        scan_journal,
    )
    from orchestrator.store.snapshot import (
        read_json,
        write_atomic,
        write_json_atomic,
    )

_HOMES = {
    "Durability": "orchestrator.store.journal",
    "Frame": "orchestrator.store.scan",
    "Item": "orchestrator.store.journal",
    "Journal": "orchestrator.store.journal",
    "JournalMark": "orchestrator.store.scan",
    "JournalScan": "orchestrator.store.scan",
    "LockHolder": "orchestrator.store.lock",
    "Parsed": "orchestrator.store.scan",
    "RepairReport": "orchestrator.store.repair",
    "SessionLock": "orchestrator.store.lock",
    "TailCut": "orchestrator.store.scan",
    "is_session_id": "orchestrator.store.ids",
    "lock_holder": "orchestrator.store.lock",
    "new_session_id": "orchestrator.store.ids",
    "open_journal": "orchestrator.store.opening",
    "read_json": "orchestrator.store.snapshot",
    "repair_journal": "orchestrator.store.repair",
    "scan_journal": "orchestrator.store.scan",
    "session_dir": "orchestrator.store.ids",
    "session_id_time": "orchestrator.store.ids",
    "validate_session_id": "orchestrator.store.ids",
    "write_atomic": "orchestrator.store.snapshot",
    "write_json_atomic": "orchestrator.store.snapshot",
}

__all__ = [
    "Durability",
    "Frame",
    "Item",
    "Journal",
    "JournalMark",
    "JournalScan",
    "LockHolder",
    "Parsed",
    "RepairReport",
    "SessionLock",
    "TailCut",
    "is_session_id",
    "lock_holder",
    "new_session_id",
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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'orchestrator.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
