"""An MCP server (stdio, written with the SDK) whose one tool, `traceparent`, answers
with the W3C trace context its request carried in `params._meta` ("none": none)."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

app = MCPServer("probe")


@app.tool(annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True))
def traceparent(ctx: Context) -> str:
    """Say the traceparent this call carried."""
    meta = ctx.request_context.meta or {}
    return f"traceparent={meta.get('traceparent', 'none')}"


if __name__ == "__main__":
    app.run()
