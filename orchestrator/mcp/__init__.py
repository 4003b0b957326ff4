"""MCP servers as tool sources (docs/mcp.md): a server (`McpServer`, or the config's
`[mcp.servers.NAME]`) is started when a session opens it, through the official `mcp` SDK
(the optional extra `orchestrator[mcp]`, imported only then), and its tools are tools
like any other, named `SERVER__TOOL`."""

from orchestrator.mcp.connection import INSTALL_HINT, Connection, McpServerError, ToolInfo
from orchestrator.mcp.pins import Approved, Pins, PinSession, listing_digest
from orchestrator.mcp.servers import McpServer, parse_selector, selector, tool_name
from orchestrator.mcp.source import McpTools, open_servers, split_tools
from orchestrator.mcp.tools import McpTool

__all__ = [
    "INSTALL_HINT",
    "Approved",
    "Connection",
    "McpServer",
    "McpServerError",
    "McpTool",
    "McpTools",
    "PinSession",
    "Pins",
    "ToolInfo",
    "listing_digest",
    "open_servers",
    "parse_selector",
    "selector",
    "split_tools",
    "tool_name",
]
