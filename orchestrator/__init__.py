"""orchestrator: agents that use tools, journaled so a session survives any crash.

The public face; everything here is re-exported from the module that owns it (`_homes.py`
says which), imported on first use so that `import orchestrator` (and the command line's
start-up) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from orchestrator._version import __version__ as __version__

if TYPE_CHECKING:
    from orchestrator.agent import TurnDeps, TurnOutcome, run_tool_calls, run_turn
    from orchestrator.host.run import EventHandler, resume, resume_sync, run, run_sync
    from orchestrator.host.stream import EventStream, stream, stream_resume
    from orchestrator.loop.assessment import Assessment, Budgets, Situation, assess
    from orchestrator.loop.plan import Plan, PlanError, PlanTask, parse_plan_json
    from orchestrator.loop.plan_markdown import parse_markdown as parse_plan_markdown
    from orchestrator.loop.plan_markdown import render as render_plan
    from orchestrator.loop.todos import TodoItem, TodoList
    from orchestrator.messages import MessageView
    from orchestrator.models import Model, ModelRequest, ToolSpec
    from orchestrator.models.fallback import Fallback
    from orchestrator.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
    from orchestrator.prices.cost import Price
    from orchestrator.session.creation import create_session
    from orchestrator.session.inspection import SessionReport, session_report
    from orchestrator.session.listing import SessionInfo, list_sessions
    from orchestrator.session.live import (
        LiveSession,
        MemorySession,
        open_session,
    )
    from orchestrator.session.replay import load_state, mail_history
    from orchestrator.state.context import AgentContext
    from orchestrator.state.events import Event, EventSink, FanOut, ListSink, NullSink
    from orchestrator.state.fold import SessionState
    from orchestrator.state.mailbox import Mail
    from orchestrator.state.plans import PlanVersion
    from orchestrator.state.settings import SessionSettings
    from orchestrator.state.tasks import TaskRecord
    from orchestrator.team.agent_files import load_definitions
    from orchestrator.team.asking import (
        ApprovalRequest,
        HostApprover,
        Question,
        QuestionAnswerer,
    )
    from orchestrator.team.definitions import AgentDefinition, Definitions, builtin_agents
    from orchestrator.team.drive import RunResult, drive
    from orchestrator.team.hook_runs import Hook
    from orchestrator.team.main_agent import MainOutcome, open_team, run_main
    from orchestrator.team.oversight import Policy
    from orchestrator.team.plan_calls import approve, execute, plan, seed_todos
    from orchestrator.team.plan_host import PlanApprover, PlanVerdict
    from orchestrator.team.port import Runner, TaskPort
    from orchestrator.team.runtime import Team
    from orchestrator.team.settings import Limits, RunSettings
    from orchestrator.team.subagent import InProcessRunner
    from orchestrator.tools import (
        FunctionTool,
        PermissionPolicy,
        Tool,
        ToolContext,
        ToolOutput,
        ToolRegistry,
        approve_all,
        tool,
        workspace_tools,
    )
    from orchestrator.tools.permissions import Denied, Later
    from orchestrator.tools.todos import todo_tools

if TYPE_CHECKING:  # events, what they carry, and the command line's renderers
    from orchestrator.cli.render import JsonLinesSink, TranscriptSink
    from orchestrator.loop.assessment import Assessed, BlockedReported, Verified
    from orchestrator.loop.compaction import CompactionStarted, ContextCompacted
    from orchestrator.loop.todos import TodosChanged
    from orchestrator.messages import (
        AssistantMessage,
        Message,
        SystemMessage,
        Thinking,
        ToolCall,
        ToolResult,
        Usage,
        UserMessage,
    )
    from orchestrator.state.approvals import ApprovalDecided, ApprovalParked, RemoteRefused
    from orchestrator.state.checkpoints import (
        SessionForked,
        WorkspaceCheckpointed,
        WorkspaceRestored,
        WorkspaceRestoring,
    )
    from orchestrator.state.events import (
        AgentStarted,
        AssistantReplied,
        MessageAdded,
        Notice,
        PermissionGranted,
        SessionStatusChanged,
        TextStreamed,
        ToolCallFinished,
        ToolCallStarted,
        ToolProgress,
        TurnEnded,
        TurnStarted,
        UsageUpdated,
        event_json,
    )
    from orchestrator.state.fallbacks import ModelSwitched
    from orchestrator.state.hooks import HookDecided
    from orchestrator.state.mailbox import MessagePosted, MessagesDelivered
    from orchestrator.state.mcp import (
        McpElicitAnswered,
        McpElicited,
        McpPinned,
        McpSampled,
        McpToolsLoaded,
        PinnedTool,
    )
    from orchestrator.state.plans import PlanDecided, PlanSubmitted, ReplanRequested
    from orchestrator.state.settings import SettingsChosen
    from orchestrator.state.tasks import TaskChanged, TaskCreated, TaskUsed
    from orchestrator.tools import deny_all
    from orchestrator.tools.permissions import Grant, Rule, Unasked

if TYPE_CHECKING:  # the engine setting (docs/engine.md)
    from orchestrator.engine import EngineUnreachable, dbos_runner
    from orchestrator.state import RanOn
    from orchestrator.state.events import (
        EngineBack,
        EngineWaiting,
        ModelWaiting,
        ReplyAtLimit,
        ReplyCut,
    )

__all__ = [
    "AgentContext",
    "AgentDefinition",
    "AgentStarted",
    "ApprovalDecided",
    "ApprovalParked",
    "ApprovalRequest",
    "Assessed",
    "Assessment",
    "AssistantMessage",
    "AssistantReplied",
    "BlockedReported",
    "Budgets",
    "CompactionStarted",
    "ContextCompacted",
    "Definitions",
    "Denied",
    "EngineBack",
    "EngineUnreachable",
    "EngineWaiting",
    "Event",
    "EventHandler",
    "EventSink",
    "EventStream",
    "Fallback",
    "FanOut",
    "FunctionTool",
    "Grant",
    "Hook",
    "HookDecided",
    "HostApprover",
    "InProcessRunner",
    "JsonLinesSink",
    "Later",
    "Limits",
    "ListSink",
    "LiveSession",
    "Mail",
    "MainOutcome",
    "McpElicitAnswered",
    "McpElicited",
    "McpPinned",
    "McpSampled",
    "McpToolsLoaded",
    "MemorySession",
    "Message",
    "MessageAdded",
    "MessagePosted",
    "MessageView",
    "MessagesDelivered",
    "Model",
    "ModelRequest",
    "ModelSwitched",
    "ModelWaiting",
    "Notice",
    "NullSink",
    "PermissionGranted",
    "PermissionPolicy",
    "PinnedTool",
    "Plan",
    "PlanApprover",
    "PlanDecided",
    "PlanError",
    "PlanSubmitted",
    "PlanTask",
    "PlanVerdict",
    "PlanVersion",
    "Policy",
    "Price",
    "Question",
    "QuestionAnswerer",
    "RanOn",
    "RemoteRefused",
    "ReplanRequested",
    "ReplyAtLimit",
    "ReplyCut",
    "Rule",
    "RunResult",
    "RunSettings",
    "Runner",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedReply",
    "SessionForked",
    "SessionInfo",
    "SessionReport",
    "SessionSettings",
    "SessionState",
    "SessionStatusChanged",
    "SettingsChosen",
    "Situation",
    "SystemMessage",
    "TaskChanged",
    "TaskCreated",
    "TaskPort",
    "TaskRecord",
    "TaskUsed",
    "Team",
    "TextStreamed",
    "Thinking",
    "TodoItem",
    "TodoList",
    "TodosChanged",
    "Tool",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolContext",
    "ToolOutput",
    "ToolProgress",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "TranscriptSink",
    "TurnDeps",
    "TurnEnded",
    "TurnOutcome",
    "TurnStarted",
    "Unasked",
    "Usage",
    "UsageUpdated",
    "UserMessage",
    "Verified",
    "WorkspaceCheckpointed",
    "WorkspaceRestored",
    "WorkspaceRestoring",
    "approve",
    "approve_all",
    "assess",
    "builtin_agents",
    "create_session",
    "dbos_runner",
    "deny_all",
    "drive",
    "event_json",
    "execute",
    "list_sessions",
    "load_definitions",
    "load_state",
    "mail_history",
    "open_session",
    "open_team",
    "parse_plan_json",
    "parse_plan_markdown",
    "plan",
    "render_plan",
    "resume",
    "resume_sync",
    "run",
    "run_main",
    "run_sync",
    "run_tool_calls",
    "run_turn",
    "seed_todos",
    "session_report",
    "stream",
    "stream_resume",
    "todo_tools",
    "tool",
    "workspace_tools",
]


def __getattr__(name: str) -> Any:
    from orchestrator._homes import HOMES  # (on first use: `import orchestrator` stays bare)

    home = HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")
    module, _, attribute = home.partition(":")  # "module:attribute" when named otherwise
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
