"""The live view of a session: a model of its agents and tasks folded from events
(`ViewModel`), frames drawn from that model (plain text, SGR-coloured lines, or rich),
and a sink that redraws a terminal at a bounded frame rate (`LiveView`), shown by the
command line's `cli/screen.py` (docs/live-view.md); a session's journal followed as
another process writes it, or replayed at a chosen speed (`follow_journal`, `Pace`).
Lazily imported: rich is loaded only by the frames and the sink.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator._face import lazy

if TYPE_CHECKING:
    from orchestrator.view.follow import JournalEntry, Pace, RecordEvents, follow_journal
    from orchestrator.view.frame import Row, plain_frame, rich_frame, rows
    from orchestrator.view.history import journal_events, session_view
    from orchestrator.view.live import LiveView, open_live_view
    from orchestrator.view.model import ViewModel
    from orchestrator.view.parts import AgentView, MailLine, Status, Totals, Verdict

_HOMES = {
    "AgentView": "parts",
    "JournalEntry": "follow",
    "LiveView": "live",
    "MailLine": "parts",
    "Pace": "follow",
    "RecordEvents": "follow",
    "Row": "frame",
    "Status": "parts",
    "Totals": "parts",
    "Verdict": "parts",
    "ViewModel": "model",
    "follow_journal": "follow",
    "journal_events": "history",
    "open_live_view": "live",
    "plain_frame": "frame",
    "rich_frame": "frame",
    "rows": "frame",
    "session_view": "history",
}

__all__ = [
    "AgentView",
    "JournalEntry",
    "LiveView",
    "MailLine",
    "Pace",
    "RecordEvents",
    "Row",
    "Status",
    "Totals",
    "Verdict",
    "ViewModel",
    "follow_journal",
    "journal_events",
    "open_live_view",
    "plain_frame",
    "rich_frame",
    "rows",
    "session_view",
]

__getattr__, __dir__ = lazy(__name__, _HOMES)
