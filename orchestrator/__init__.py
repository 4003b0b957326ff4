"""orchestrator: agents that use tools, journaled so a session survives any crash.

The public face; everything here is re-exported from the module that owns it, imported
on first use so that `import orchestrator` (and the command line's start-up) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from orchestrator.agent import TurnDeps, TurnOutcome, run_tool_calls, run_turn
    from orchestrator.context import AgentContext
    from orchestrator.events import Event, EventSink, FanOut, ListSink, NullSink
    from orchestrator.messages import MessageView
    from orchestrator.models import Model, ModelRequest, ToolSpec
    from orchestrator.models.scripted import ScriptedModel, ScriptedReply
    from orchestrator.replay import load_state
    from orchestrator.runner import RunResult, RunSettings, drive
    from orchestrator.session import (
        LiveSession,
        MemorySession,
        create_session,
        open_session,
    )
    from orchestrator.state import SessionState

_HOMES = {
    "AgentContext": "orchestrator.context",
    "Event": "orchestrator.events",
    "EventSink": "orchestrator.events",
    "FanOut": "orchestrator.events",
    "ListSink": "orchestrator.events",
    "LiveSession": "orchestrator.session",
    "MemorySession": "orchestrator.session",
    "MessageView": "orchestrator.messages",
    "Model": "orchestrator.models",
    "ModelRequest": "orchestrator.models",
    "NullSink": "orchestrator.events",
    "RunResult": "orchestrator.runner",
    "RunSettings": "orchestrator.runner",
    "ScriptedModel": "orchestrator.models.scripted",
    "ScriptedReply": "orchestrator.models.scripted",
    "SessionState": "orchestrator.state",
    "ToolSpec": "orchestrator.models",
    "TurnDeps": "orchestrator.agent",
    "TurnOutcome": "orchestrator.agent",
    "create_session": "orchestrator.session",
    "drive": "orchestrator.runner",
    "load_state": "orchestrator.replay",
    "open_session": "orchestrator.session",
    "run_tool_calls": "orchestrator.agent",
    "run_turn": "orchestrator.agent",
}

__all__ = [
    "AgentContext",
    "Event",
    "EventSink",
    "FanOut",
    "ListSink",
    "LiveSession",
    "MemorySession",
    "MessageView",
    "Model",
    "ModelRequest",
    "NullSink",
    "RunResult",
    "RunSettings",
    "ScriptedModel",
    "ScriptedReply",
    "SessionState",
    "ToolSpec",
    "TurnDeps",
    "TurnOutcome",
    "create_session",
    "drive",
    "load_state",
    "open_session",
    "run_tool_calls",
    "run_turn",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
