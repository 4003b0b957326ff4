"""Records and the state they fold into: each agent's context, the mailbox, the task
registry, the manifest, and `SessionState`, the one fold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator._face import lazy

if TYPE_CHECKING:
    from orchestrator.state.context import AgentContext
    from orchestrator.state.events import (
        Event,
        EventSink,
        FanOut,
        ListSink,
        NullSink,
        Record,
        decode_record,
        event_json,
    )
    from orchestrator.state.fold import USER, SessionState
    from orchestrator.state.mailbox import Caps, Mail, Mailbox, MailKind, Priority
    from orchestrator.state.manifest import Manifest, SessionStatus, read_manifest, write_manifest
    from orchestrator.state.settings import SessionSettings
    from orchestrator.state.snapshot import Snapshot
    from orchestrator.state.tasks import RanOn, Registry, TaskRecord, TaskState

_HOMES = {
    "AgentContext": "context",
    "Caps": "mailbox",
    "Event": "events",
    "EventSink": "events",
    "FanOut": "events",
    "ListSink": "events",
    "Mail": "mailbox",
    "MailKind": "mailbox",
    "Mailbox": "mailbox",
    "Manifest": "manifest",
    "NullSink": "events",
    "Priority": "mailbox",
    "RanOn": "tasks",
    "Record": "events",
    "Registry": "tasks",
    "SessionSettings": "settings",
    "SessionState": "fold",
    "SessionStatus": "manifest",
    "Snapshot": "snapshot",
    "TaskRecord": "tasks",
    "TaskState": "tasks",
    "USER": "fold",
    "decode_record": "events",
    "event_json": "events",
    "read_manifest": "manifest",
    "write_manifest": "manifest",
}

__all__ = [
    "USER",
    "AgentContext",
    "Caps",
    "Event",
    "EventSink",
    "FanOut",
    "ListSink",
    "Mail",
    "MailKind",
    "Mailbox",
    "Manifest",
    "NullSink",
    "Priority",
    "RanOn",
    "Record",
    "Registry",
    "SessionSettings",
    "SessionState",
    "SessionStatus",
    "Snapshot",
    "TaskRecord",
    "TaskState",
    "decode_record",
    "event_json",
    "read_manifest",
    "write_manifest",
]

__getattr__, __dir__ = lazy(__name__, _HOMES)
