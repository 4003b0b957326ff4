"""orchestrator: agents that use tools, journaled so a session survives any crash.

The public face; everything here is re-exported from the module that owns it.
"""

from orchestrator.agent import AgentState, TurnDeps, TurnOutcome, run_tool_calls, run_turn
from orchestrator.errors import (
    ConfigError,
    ContextTooLong,
    InvalidSessionId,
    JournalCorrupt,
    ModelError,
    OrchestratorError,
    ProviderAuthError,
    ProviderBadRequest,
    ProviderFatal,
    ProviderRateLimited,
    ProviderTransient,
    ScriptError,
    SessionError,
    SessionLocked,
    SessionNotFound,
    ToolFailed,
    WorkspaceEscape,
)
from orchestrator.events import Event, EventSink, FanOut, ListSink, NullSink
from orchestrator.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from orchestrator.models import Model, ModelRequest, ToolSpec
from orchestrator.models.scripted import ScriptedModel, ScriptedReply
from orchestrator.runner import RunResult, RunSettings, drive
from orchestrator.session import LiveSession, create_session, load_state, open_session
from orchestrator.state import SessionState
from orchestrator.tools import (
    PermissionPolicy,
    Tool,
    ToolContext,
    ToolOutput,
    ToolRegistry,
    Workspace,
    workspace_tools,
)

__all__ = [
    "AgentState",
    "AssistantMessage",
    "ConfigError",
    "ContextTooLong",
    "Event",
    "EventSink",
    "FanOut",
    "InvalidSessionId",
    "JournalCorrupt",
    "ListSink",
    "LiveSession",
    "Message",
    "Model",
    "ModelError",
    "ModelRequest",
    "NullSink",
    "OrchestratorError",
    "PermissionPolicy",
    "ProviderAuthError",
    "ProviderBadRequest",
    "ProviderFatal",
    "ProviderRateLimited",
    "ProviderTransient",
    "RunResult",
    "RunSettings",
    "ScriptError",
    "ScriptedModel",
    "ScriptedReply",
    "SessionError",
    "SessionLocked",
    "SessionNotFound",
    "SessionState",
    "SystemMessage",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolFailed",
    "ToolOutput",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "TurnDeps",
    "TurnOutcome",
    "Usage",
    "UserMessage",
    "Workspace",
    "WorkspaceEscape",
    "create_session",
    "drive",
    "load_state",
    "open_session",
    "run_tool_calls",
    "run_turn",
    "workspace_tools",
]
