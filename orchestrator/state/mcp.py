"""What a session keeps of its MCP servers' tools (docs/mcp.md): the definition of each
tool as the session pinned it, and the tools each agent loaded on demand.

Two records:

- `mcp_pinned`: the definitions (name, description, schemas, flags) of tools of `server`
  and their digests, journaled the first time the session offers them to a model, and
  again when a person approved a changed one (`approved`). The fold keeps each tool's
  latest: what a resume offers the model, and what a call is checked against.
- `mcp_tools_loaded`: `agent` loaded the full definitions of `tools` (names as the model
  sees them, `SERVER__TOOL`) with `search_tools`; from then on they are among the tools
  its requests offer, in the order loaded, on resume too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from orchestrator.eventbase import EventBase


class PinnedTool(msgspec.Struct, frozen=True, kw_only=True):
    """One tool's definition as the session pinned it: `name` is the server's (`search`),
    `digest` the `sha256:` of the rest (mcp/pins.py)."""

    name: str
    digest: str
    description: str = ""
    input_schema: dict[str, Any] = msgspec.field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    read_only: bool = False
    idempotent: bool = False
    destructive: bool = False


class McpPinned(EventBase, frozen=True, tag="mcp_pinned"):
    """Record: these definitions of `server`'s tools are pinned for the session; with
    `approved`, a person approved them after they changed."""

    server: str
    tools: tuple[PinnedTool, ...]
    approved: bool = False


class McpToolsLoaded(EventBase, frozen=True, tag="mcp_tools_loaded"):
    """Record: `agent` loaded the full definitions of `tools` (`SERVER__TOOL`)."""

    tools: tuple[str, ...]


McpRecords = McpPinned | McpToolsLoaded


class McpState(msgspec.Struct):
    """The pinned definitions by server and tool, and each agent's loaded tools in the
    order it loaded them."""

    pins: dict[str, dict[str, PinnedTool]] = msgspec.field(default_factory=dict)
    loaded: dict[str, list[str]] = msgspec.field(default_factory=dict)


def _pinned(mcp: McpState, seq: int, record: McpPinned) -> None:
    tools = mcp.pins.setdefault(record.server, {})
    for tool in record.tools:
        tools[tool.name] = tool


def _loaded(mcp: McpState, seq: int, record: McpToolsLoaded) -> None:
    loaded = mcp.loaded.setdefault(record.agent, [])
    loaded.extend(name for name in record.tools if name not in loaded)


MCP_FOLDS: dict[type, Callable[[McpState, int, Any], None]] = {
    McpPinned: _pinned,
    McpToolsLoaded: _loaded,
}
