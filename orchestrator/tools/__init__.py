"""Tools agents call, the workspace they are confined to, and the permission policy."""

from orchestrator.tools.base import AnyTool, Tool, ToolContext, ToolOutput, ToolRegistry
from orchestrator.tools.files import EditFile, Grep, ListFiles, ReadFile, WriteFile
from orchestrator.tools.permissions import (
    Approver,
    Decision,
    PermissionPolicy,
    approve_all,
    deny_all,
)
from orchestrator.tools.shell import Shell
from orchestrator.tools.workspace import Workspace


def workspace_tools() -> ToolRegistry:
    """The standard set: read, write, edit, list, grep, shell."""
    return ToolRegistry([ReadFile(), WriteFile(), EditFile(), ListFiles(), Grep(), Shell()])


__all__ = [
    "AnyTool",
    "Approver",
    "Decision",
    "EditFile",
    "Grep",
    "ListFiles",
    "PermissionPolicy",
    "ReadFile",
    "Shell",
    "Tool",
    "ToolContext",
    "ToolOutput",
    "ToolRegistry",
    "Workspace",
    "WriteFile",
    "approve_all",
    "deny_all",
    "workspace_tools",
]
