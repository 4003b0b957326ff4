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
    from orchestrator.assessment import Assessment, Budgets, Situation, assess
    from orchestrator.context import AgentContext
    from orchestrator.definitions import AgentDefinition, Definitions, load_definitions
    from orchestrator.events import Event, EventSink, FanOut, ListSink, NullSink
    from orchestrator.mailbox import Mail
    from orchestrator.main_agent import MainOutcome, open_team, run_main
    from orchestrator.messages import MessageView
    from orchestrator.models import Model, ModelRequest, ToolSpec
    from orchestrator.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
    from orchestrator.oversight import Policy
    from orchestrator.replay import load_state, mail_history
    from orchestrator.runner import RunResult, RunSettings, drive
    from orchestrator.session import (
        LiveSession,
        MemorySession,
        create_session,
        open_session,
    )
    from orchestrator.state import SessionState
    from orchestrator.subagent import InProcessRunner
    from orchestrator.tasks import TaskRecord
    from orchestrator.team import Limits, Runner, Team, TeamSettings
    from orchestrator.todos import TodoItem, TodoList
    from orchestrator.tools import (
        PermissionPolicy,
        Tool,
        ToolContext,
        ToolOutput,
        ToolRegistry,
        approve_all,
        workspace_tools,
    )

_HOMES = {
    "AgentContext": "orchestrator.context",
    "AgentDefinition": "orchestrator.definitions",
    "Assessment": "orchestrator.assessment",
    "Budgets": "orchestrator.assessment",
    "Definitions": "orchestrator.definitions",
    "Event": "orchestrator.events",
    "EventSink": "orchestrator.events",
    "FanOut": "orchestrator.events",
    "InProcessRunner": "orchestrator.subagent",
    "Limits": "orchestrator.team",
    "ListSink": "orchestrator.events",
    "LiveSession": "orchestrator.session",
    "Mail": "orchestrator.mailbox",
    "MainOutcome": "orchestrator.main_agent",
    "MemorySession": "orchestrator.session",
    "MessageView": "orchestrator.messages",
    "Model": "orchestrator.models",
    "ModelRequest": "orchestrator.models",
    "NullSink": "orchestrator.events",
    "PermissionPolicy": "orchestrator.tools",
    "Policy": "orchestrator.oversight",
    "RunResult": "orchestrator.runner",
    "RunSettings": "orchestrator.runner",
    "Runner": "orchestrator.team",
    "ScriptedCall": "orchestrator.models.scripted",
    "ScriptedModel": "orchestrator.models.scripted",
    "ScriptedReply": "orchestrator.models.scripted",
    "SessionState": "orchestrator.state",
    "Situation": "orchestrator.assessment",
    "TaskRecord": "orchestrator.tasks",
    "Team": "orchestrator.team",
    "TeamSettings": "orchestrator.team",
    "TodoItem": "orchestrator.todos",
    "TodoList": "orchestrator.todos",
    "Tool": "orchestrator.tools",
    "ToolContext": "orchestrator.tools",
    "ToolOutput": "orchestrator.tools",
    "ToolRegistry": "orchestrator.tools",
    "ToolSpec": "orchestrator.models",
    "TurnDeps": "orchestrator.agent",
    "TurnOutcome": "orchestrator.agent",
    "approve_all": "orchestrator.tools",
    "assess": "orchestrator.assessment",
    "create_session": "orchestrator.session",
    "drive": "orchestrator.runner",
    "load_definitions": "orchestrator.definitions",
    "load_state": "orchestrator.replay",
    "mail_history": "orchestrator.replay",
    "open_session": "orchestrator.session",
    "open_team": "orchestrator.main_agent",
    "run_main": "orchestrator.main_agent",
    "run_tool_calls": "orchestrator.agent",
    "run_turn": "orchestrator.agent",
    "workspace_tools": "orchestrator.tools",
}

__all__ = [
    "AgentContext",
    "AgentDefinition",
    "Assessment",
    "Budgets",
    "Definitions",
    "Event",
    "EventSink",
    "FanOut",
    "InProcessRunner",
    "Limits",
    "ListSink",
    "LiveSession",
    "Mail",
    "MainOutcome",
    "MemorySession",
    "MessageView",
    "Model",
    "ModelRequest",
    "NullSink",
    "PermissionPolicy",
    "Policy",
    "RunResult",
    "RunSettings",
    "Runner",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedReply",
    "SessionState",
    "Situation",
    "TaskRecord",
    "Team",
    "TeamSettings",
    "TodoItem",
    "TodoList",
    "Tool",
    "ToolContext",
    "ToolOutput",
    "ToolRegistry",
    "ToolSpec",
    "TurnDeps",
    "TurnOutcome",
    "approve_all",
    "assess",
    "create_session",
    "drive",
    "load_definitions",
    "load_state",
    "mail_history",
    "open_session",
    "open_team",
    "run_main",
    "run_tool_calls",
    "run_turn",
    "workspace_tools",
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
