"""A session on disk: the live session that journals and folds, replay, migrations of
older formats, the listing of sessions and the report that `sessions show` prints, and
time travel (workspace checkpoints, points, fork and rewind).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator._face import lazy

if TYPE_CHECKING:
    from orchestrator.session.bundle import Imported, export_bundle, import_bundle
    from orchestrator.session.check import repair, verify
    from orchestrator.session.creation import create_session
    from orchestrator.session.fork import Forked, fork, rewind
    from orchestrator.session.inspection import SessionReport, session_report
    from orchestrator.session.ledger import usage_ledger
    from orchestrator.session.listing import SessionInfo, list_sessions
    from orchestrator.session.live import LiveSession, open_session
    from orchestrator.session.memory import MemorySession
    from orchestrator.session.migrations import MIGRATIONS, migrate
    from orchestrator.session.points import Point, session_points
    from orchestrator.session.replay import load, load_state, mail_history
    from orchestrator.session.report import describe, quick_describe

_HOMES = {
    "Imported": "bundle",
    "export_bundle": "bundle",
    "import_bundle": "bundle",
    "Forked": "fork",
    "Point": "points",
    "fork": "fork",
    "rewind": "fork",
    "session_points": "points",
    "LiveSession": "live",
    "verify": "check",
    "repair": "check",
    "MIGRATIONS": "migrations",
    "MemorySession": "memory",
    "SessionInfo": "listing",
    "SessionReport": "inspection",
    "create_session": "creation",
    "describe": "report",
    "load": "replay",
    "list_sessions": "listing",
    "load_state": "replay",
    "mail_history": "replay",
    "migrate": "migrations",
    "open_session": "live",
    "quick_describe": "report",
    "session_report": "inspection",
    "usage_ledger": "ledger",
}

__all__ = [
    "MIGRATIONS",
    "Forked",
    "Imported",
    "LiveSession",
    "MemorySession",
    "Point",
    "SessionInfo",
    "SessionReport",
    "create_session",
    "describe",
    "export_bundle",
    "fork",
    "import_bundle",
    "list_sessions",
    "load",
    "load_state",
    "mail_history",
    "migrate",
    "open_session",
    "quick_describe",
    "repair",
    "rewind",
    "session_points",
    "session_report",
    "usage_ledger",
    "verify",
]

__getattr__, __dir__ = lazy(__name__, _HOMES)
