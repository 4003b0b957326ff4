"""The team as an MCP server (`orchestrator mcp serve`, docs/mcp.md): sessions started,
watched, answered and decided on by another agent through MCP tools, run in the server's
process on trio as ordinary sessions on disk. The SDK (the `mcp` extra) is imported only
by `app`, when a server is made."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator._face import lazy

if TYPE_CHECKING:
    from orchestrator.serve.app import check_loopback, make_server, serve_http, serve_stdio
    from orchestrator.serve.desk import Desk, Hooks, Launcher, ServeError

_HOMES = {
    "Desk": "desk",
    "Hooks": "desk",
    "Launcher": "desk",
    "ServeError": "desk",
    "check_loopback": "app",
    "make_server": "app",
    "serve_http": "app",
    "serve_stdio": "app",
}
__all__ = [
    "Desk",
    "Hooks",
    "Launcher",
    "ServeError",
    "check_loopback",
    "make_server",
    "serve_http",
    "serve_stdio",
]
__getattr__, __dir__ = lazy(__name__, _HOMES)
