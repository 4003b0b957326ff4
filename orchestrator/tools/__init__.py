"""Tools agents call (and `tool`, which makes one of a function), the workspace they are
confined to, and the permission policy."""

from orchestrator.tools.base import (
    WORKSPACE_TOOLS,
    AnyTool,
    Tool,
    ToolContext,
    ToolOutput,
    ToolRegistry,
)
from orchestrator.tools.environment import EnvPolicy, Redactor
from orchestrator.tools.files import EditFile, ReadFile, WriteFile
from orchestrator.tools.functions import FunctionTool, tool
from orchestrator.tools.permissions import (
    Approver,
    Decision,
    PermissionPolicy,
    approve_all,
    deny_all,
)
from orchestrator.tools.sandbox import Sandbox
from orchestrator.tools.search import Grep, ListFiles
from orchestrator.tools.shell import Shell
from orchestrator.tools.workspace import Workspace


def workspace_tools(
    shell_env: EnvPolicy | None = None, sandbox: Sandbox | None = None
) -> ToolRegistry:
    """The standard set: read, write, edit, list, grep, shell (whose commands see the
    environment `shell_env` allows, by default everything but secret-looking names, and
    run in `sandbox`, by default the `workspace` level where the machine has one)."""
    shell = Shell(env_policy=shell_env, sandbox=sandbox)
    return ToolRegistry([ReadFile(), WriteFile(), EditFile(), ListFiles(), Grep(), shell])


__all__ = [
    "WORKSPACE_TOOLS",
    "AnyTool",
    "Approver",
    "Decision",
    "EditFile",
    "EnvPolicy",
    "FunctionTool",
    "Grep",
    "ListFiles",
    "PermissionPolicy",
    "ReadFile",
    "Redactor",
    "Sandbox",
    "Shell",
    "Tool",
    "ToolContext",
    "ToolOutput",
    "ToolRegistry",
    "Workspace",
    "WriteFile",
    "approve_all",
    "deny_all",
    "tool",
    "workspace_tools",
]
