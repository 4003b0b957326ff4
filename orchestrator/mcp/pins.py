"""Pinned tool definitions (docs/mcp.md, "Pinned definitions"): a server that changes a
tool's description or schema after the session took it (the "rug pull") does not reach
the model with it, and its calls are refused until a person approves the change.

The first time a session offers a server's tool, its definition (name, description,
input and output schemas, the flags its annotations give) and their digest are journaled
(`mcp_pinned`, state/mcp.py). From then on the model is offered the pinned definition,
on resume too, whatever the server lists. Each call is checked against the server's
listing of its tools (its last one, listed anew when the server says its tools changed,
when it was started again, or `pin_check` seconds after: mcp/connection.py `listing`): a
tool whose digest differs from its pin is not called, and the error says what changed,
unless a person approved the server's tools as they are now (trusted for the project:
`orchestrator mcp approve NAME`), which pins the new definition.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol

import msgspec
import orjson

from orchestrator.mcp.connection import Connection, ToolInfo
from orchestrator.mcp.servers import McpServer
from orchestrator.state.mcp import McpPinned, McpState, PinnedTool

Approved = Callable[[str, str], bool]
"""Whether a person approved, for this project, server NAME's tools as listed now (the
digest of its listing, `listing_digest`)."""


class Changed(msgspec.Struct, frozen=True):
    """A tool whose definition changed since the session pinned it, met when `agent`
    calls it: `what` says what changed, for the person asked to approve it."""

    server: str
    tool: str  # the server's name for it
    agent: str
    what: str

    @property
    def line(self) -> str:
        return (
            f"MCP server {self.server!r} changed its tool {self.tool} since this session "
            f"took it ({self.what})"
        )


Confirm = Callable[[Changed], Awaitable[bool]]
"""Asks a person whether to take a changed tool's new definition for the session (the
terminal's question, the library host's approver): True pins it and makes the call."""


class _HasMcp(Protocol):
    mcp: McpState


class PinSession(Protocol):
    """Where pins are journaled and folded: a live session (or one in memory)."""

    @property
    def state(self) -> _HasMcp: ...

    async def emit(self, event: Any, *, durable: bool = False) -> None: ...


def _sha256(value: Any) -> str:
    return "sha256:" + hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


def pinned(info: ToolInfo) -> PinnedTool:
    """`info` as a pin, with its digest."""
    body = _pinnable(info)
    return PinnedTool(digest=_sha256(body), **body)


def _pinnable(info: ToolInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "description": info.description,
        "input_schema": info.input_schema,
        "output_schema": info.output_schema,
        "read_only": info.read_only,
        "idempotent": info.idempotent,
        "destructive": info.destructive,
    }


def digest(info: ToolInfo) -> str:
    return _sha256(_pinnable(info))


def listing_digest(listed: Iterable[ToolInfo]) -> str:
    """The digest of a server's tools as listed: what a person's approval names."""
    return _sha256({info.name: digest(info) for info in listed})


def info_of(pin: PinnedTool) -> ToolInfo:
    """The definition a pin keeps, as a tool is made of it."""
    return ToolInfo(
        name=pin.name,
        description=pin.description,
        input_schema=dict(pin.input_schema),
        read_only=pin.read_only,
        idempotent=pin.idempotent,
        destructive=pin.destructive,
        output_schema=None if pin.output_schema is None else dict(pin.output_schema),
    )


def what_changed(old: PinnedTool, new: PinnedTool) -> str:
    """What differs between two definitions of a tool, in a few words for a person."""
    parts = []
    if old.description != new.description:
        parts.append(f"description {_short(old.description)} is now {_short(new.description)}")
    if old.input_schema != new.input_schema:
        parts.append("its input schema")
    if old.output_schema != new.output_schema:
        parts.append("its output schema")
    flags = ("read_only", "idempotent", "destructive")
    moved = [f for f in flags if getattr(old, f) != getattr(new, f)]
    if moved:
        parts.append("its annotations (" + ", ".join(moved) + ")")
    return "; ".join(parts) or "its definition"


def _short(text: str, limit: int = 120) -> str:
    one = " ".join(text.split())
    return repr(one if len(one) <= limit else one[: limit - 1] + "…")


class Pins:
    """The session's pins of its servers' tools: made when the servers are open and the
    session is (`McpTools.pinned`), asked by each MCP call before it is sent."""

    def __init__(self, session: PinSession, approved: Approved | None = None) -> None:
        self._session = session
        self._approved = approved
        self.confirm: Confirm | None = None  # set once the run knows who asks (answering)

    def _pins(self, server: str) -> dict[str, PinnedTool]:
        return self._session.state.mcp.pins.get(server, {})

    def _approves(self, server: str, listed: Sequence[ToolInfo]) -> bool:
        return self._approved is not None and self._approved(server, listing_digest(listed))

    async def _pin(
        self,
        server: str,
        infos: Sequence[ToolInfo],
        *,
        approved: bool,
        resources: bool | None = None,
    ) -> None:
        record = McpPinned(
            agent="",
            server=server,
            tools=tuple(map(pinned, infos)),
            approved=approved,
            resources=resources,
        )
        await self._session.emit(record, durable=True)

    async def offered(
        self, server: McpServer, listed: Sequence[ToolInfo], resources: bool = False
    ) -> list[ToolInfo]:
        """What the session offers of `server`'s tools `listed`: a tool not pinned yet is
        pinned now as listed; a pinned one is offered as pinned, and one that changed,
        approved since, is pinned anew. `resources`: whether the server's resources are
        read through a tool (pinned with its tools: mcp/source.py starts such a server
        with a resumed session)."""
        pins = self._pins(server.name)
        new = [info for info in listed if info.name not in pins]
        if new or self._session.state.mcp.resources.get(server.name) is not resources:
            await self._pin(server.name, new, approved=False, resources=resources)
        changed = [i for i in listed if i.name in pins and pins[i.name].digest != digest(i)]
        if changed and self._approves(server.name, listed):
            await self._pin(server.name, changed, approved=True)
        pins = self._pins(server.name)
        return [info_of(pins[info.name]) for info in listed]

    async def check(self, connection: Connection, tool: str, agent: str = "main") -> str | None:
        """None when `tool` of `connection`'s server is listed as pinned (or as a person
        approved since, for the project or now when `agent`'s call met the change:
        pinned anew); else why it is not called."""
        server = connection.server
        listed = [info for info in await connection.listing() if server.takes(info.name)]
        now = next((info for info in listed if info.name == tool), None)
        if now is None:
            return f"MCP server {server.name!r} no longer offers the tool {tool}: not called"
        pin = self._pins(server.name).get(tool)
        if pin is None or pin.digest == digest(now):
            return None
        changed = Changed(server.name, tool, agent, what_changed(pin, pinned(now)))
        if self._approves(server.name, listed) or (
            self.confirm is not None and await self.confirm(changed)
        ):
            await self._pin(server.name, [now], approved=True)
            return None
        return (
            f"{changed.line}: not called until a person approves the new definition "
            f"(orchestrator mcp approve {server.name})"
        )
