"""A server's resources, readable through a tool (docs/mcp.md, "Resources"): a server
that offers resources gives the session one more tool, `SERVER__read_resource(uri)`,
whose description lists the resources it listed when the session started. It is a tool
of that server like its own, so an agent type sees it only when its `mcp:SERVER/GLOB`
entries take it (`mcp:docs/*`, `mcp:docs/read_resource`), and rules name it
`mcp:SERVER/read_resource`. It reads, so it is read-only and runs again after a crash.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel

from orchestrator.errors import ToolFailed
from orchestrator.mcp.asked import Calling
from orchestrator.mcp.connection import Connection, McpServerError, ToolInfo
from orchestrator.mcp.tools import McpTool
from orchestrator.tools.base import ToolContext, ToolOutput

READ_RESOURCE: Final = "read_resource"
LISTED: Final = 50
"""How many of a server's resources the tool's description names."""


def resource_tool(connection: Connection, listed: list[tuple[str, str, str]]) -> McpTool:
    """The `read_resource` tool of `connection`'s server, naming the resources `listed`."""
    name = connection.server.name
    lines = [f"- {uri}: {title}" + (f" ({about})" if about else "") for uri, title, about in listed]
    more = len(lines) - LISTED
    shown = "\n".join(lines[:LISTED]) + (f"\n(and {more} more)" if more > 0 else "")
    description = f"Read a resource of MCP server {name} by its URI; the text of its content." + (
        f" Its resources:\n{shown}" if lines else ""
    )
    schema = {
        "type": "object",
        "properties": {"uri": {"type": "string", "description": "the resource's URI"}},
        "required": ["uri"],
    }
    info = ToolInfo(READ_RESOURCE, description, schema, True, True, False)
    return ResourceTool(connection, info)


class ResourceTool(McpTool):
    """`SERVER__read_resource`: reads one of the server's resources."""

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        uri = str(args.model_dump(by_alias=True)["uri"])
        calling = Calling.of(ctx, READ_RESOURCE)
        try:
            text = await self.connection.read_resource(uri, calling)
        except McpServerError as exc:
            raise ToolFailed(str(exc)) from exc
        if calling.unanswered:  # it asked the person, and nobody could answer (as McpTool)
            raise ToolFailed(calling.unanswered)
        limit = self.connection.server.max_output
        if len(text) > limit:
            raise ToolFailed(
                f"MCP server {self.server!r}: {uri} has {len(text)} characters, over its "
                f"limit of {limit} (max_output)"
            )
        return ToolOutput(text)
