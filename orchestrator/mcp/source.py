"""The MCP servers of one session, opened together: each started (side by side), its
tools listed and made tools like any other (`McpTool`), all stopped when the session's
block ends; a resumed session's server whose tools it pinned starts at the first call of
one of them instead. A server that does not start is one line in `McpTools.failed` (and
has no tools in the session), or its calls' error, not the session's end. And how an
agent type's `mcp:SERVER/GLOB` entries become the names of the tools they match.
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import trio

from orchestrator.errors import ConfigError
from orchestrator.mcp.asked import Calling, paused
from orchestrator.mcp.connection import Connection, McpServerError, ToolInfo, open_connection
from orchestrator.mcp.elicit import ElicitAsker, Elicitor
from orchestrator.mcp.pins import Approved, Confirm, Pins, PinSession, info_of
from orchestrator.mcp.resources import READ_RESOURCE, ResourceTool, resource_tool
from orchestrator.mcp.sampling import Sampler
from orchestrator.mcp.servers import McpServer, parse_selector
from orchestrator.mcp.tools import McpTool
from orchestrator.state.mcp import McpState
from orchestrator.tools.base import ToolRegistry


@dataclass(frozen=True)
class McpTools:
    """What the session's servers give: their tools, and one line per server that failed."""

    servers: tuple[McpServer, ...]
    tools: tuple[McpTool, ...]
    failed: tuple[str, ...] = ()
    connections: tuple[Connection, ...] = ()

    def answering(
        self,
        session: PinSession,
        ask: ElicitAsker | None,
        *,
        by: str,
        confirm: Confirm | None = None,
    ) -> None:
        """From now on what the servers ask is answered for `session`: the person's
        questions by `ask` (`by`: "person" or "host"; None: nobody, the session stops
        blocked; by "worker": nobody, and the task's call is told so), completions by the
        calling agent's model (mcp/sampling.py); and a tool that changed since the
        session pinned it is approved by `confirm` when its call meets the change (None:
        refused, mcp/pins.py)."""
        answers = _Answers(Elicitor(session, ask, by), Sampler(session))
        for connection in self.connections:
            connection.calls.asks = answers
        for tool in self.tools:
            if tool.pins is not None:
                tool.pins.confirm = confirm

    def names(self, entries: Iterable[str]) -> tuple[str, ...]:
        """`entries` (an agent type's `tools`) with each `mcp:SERVER/GLOB` replaced by
        the names of the server's tools it matches (none when the server failed to
        start). An entry naming no server of the session is a `ConfigError`."""
        known = {server.name for server in self.servers}
        names: list[str] = []
        for entry in entries:
            selected = parse_selector(entry)
            if selected is None:
                names.append(entry)
                continue
            server, glob = selected
            if server not in known:
                given = ", ".join(sorted(known)) or "none"
                raise ConfigError(
                    f"{entry!r} names the MCP server {server!r}, which this session was not "
                    f"given (its MCP servers: {given})"
                )
            names.extend(
                tool.name
                for tool in self.tools
                if tool.server == server and fnmatch.fnmatchcase(tool.info.name, glob)
            )
        return tuple(dict.fromkeys(names))

    def added_to(self, registry: ToolRegistry) -> ToolRegistry:
        """`registry` with these tools added; an MCP tool named as one already there is a
        `ConfigError` naming both."""
        for tool in self.tools:
            if tool.name in registry:
                raise ConfigError(
                    f"MCP server {tool.server!r} has a tool named {tool.info.name!r}, shown "
                    f"as {tool.name!r}: the session already has a tool of that name"
                )
        return ToolRegistry([*registry, *self.tools])

    async def pinned(
        self,
        session: PinSession,
        approved: Approved | None = None,
        trace_parent: Callable[[str], str] | None = None,
    ) -> McpTools:
        """These tools as `session` pinned them (pinning those it had not, mcp/pins.py),
        each call checked against its pin; `approved`: whether a person approved a
        server's changed tools for the project (None: no one did); `trace_parent`: a
        traced run's `traceparent` of a call, by its ref, sent with each call."""
        pins = Pins(session, approved)
        tools: list[McpTool] = []
        for server in self.servers:
            mine = [tool for tool in self.tools if tool.server == server.name]
            own = [tool for tool in mine if not isinstance(tool, ResourceTool)]
            if own:  # (the server's own tools: ours, `read_resource`, is not pinned)
                reads = len(own) < len(mine)
                offered = await pins.offered(server, [tool.info for tool in own], reads)
                tools.extend(
                    McpTool(tool.connection, info, pins, trace_parent)
                    for tool, info in zip(own, offered, strict=True)
                )
            tools.extend(tool for tool in mine if isinstance(tool, ResourceTool))
        return McpTools(self.servers, tuple(tools), self.failed, self.connections)


class _Answers(msgspec.Struct, frozen=True):
    """What the session answers its servers (mcp/asked.py `ServerAsks`)."""

    elicitor: Elicitor
    sampler: Sampler

    async def elicit(self, server: McpServer, calling: Calling, params: Any) -> Any:
        with paused(calling):  # (the person's time is not the server's)
            return await self.elicitor(server, calling, params)

    async def sample(self, server: McpServer, calling: Calling, params: Any) -> Any:
        with paused(calling):
            return await self.sampler(server, calling, params)


@contextlib.asynccontextmanager
async def open_servers(
    servers: Sequence[McpServer],
    environ: Mapping[str, str] | None = None,
    kept: McpState | None = None,
) -> AsyncIterator[McpTools]:
    """`servers` started for the time of the block, side by side (and stopped when it
    ends), with their tools. Two servers of one name are a `ConfigError`. `kept`: what a
    resumed session kept of its servers: one whose tools it pinned, and whose resources
    it did not read through a tool, is not started now but at the first call of one of
    its tools, which are made of its pins (`lazy`)."""
    names = [server.name for server in servers]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ConfigError(f"two MCP servers are named {', '.join(map(repr, twice))}")
    taken: dict[str, list[McpTool]] = {}
    failed: dict[str, str] = {}

    async def start(connection: Connection) -> None:
        try:
            await connection.start()
            taken[connection.server.name] = await _listed(connection)
        except McpServerError as exc:
            failed[connection.server.name] = str(exc)

    async with contextlib.AsyncExitStack() as stack:
        connections = [
            await stack.enter_async_context(open_connection(server, environ)) for server in servers
        ]
        async with trio.open_nursery() as nursery:
            for connection in connections:
                pins = lazy(connection.server, kept)
                if pins is None:
                    nursery.start_soon(start, connection)
                else:
                    taken[connection.server.name] = [McpTool(connection, p) for p in pins]
        tools = [tool for name in names for tool in taken.get(name, ())]
        said = tuple(failed[name] for name in names if name in failed)
        yield McpTools(tuple(servers), tuple(tools), said, tuple(connections))


def lazy(server: McpServer, kept: McpState | None) -> list[ToolInfo] | None:
    """The definitions of `server`'s tools the session `kept` pinned (those its `tools`
    globs take), when it is started at its first call rather than now; else None."""
    if kept is None or server.name not in kept.pins or kept.resources.get(server.name) is not False:
        return None
    return [info_of(pin) for name, pin in kept.pins[server.name].items() if server.takes(name)]


async def _listed(connection: Connection) -> list[McpTool]:
    """The tools of `connection`'s started server that the session takes, and its
    `read_resource` tool when it has resources (mcp/resources.py)."""
    server = connection.server
    listed = await connection.list_tools()
    taken = [McpTool(connection, info) for info in listed if server.takes(info.name)]
    own = {info.name for info in listed}
    if connection.offers_resources() and _reads(server, own):
        resources = await connection.list_resources()
        if resources:
            taken.append(resource_tool(connection, resources))
    return taken


def _reads(server: McpServer, own: set[str]) -> bool:
    """Whether the session gives `server` its `read_resource` tool: its `tools` globs
    take it, and the server has no tool of that name itself."""
    return server.takes(READ_RESOURCE) and READ_RESOURCE not in own


def split_tools(given: Iterable[object]) -> tuple[list[McpServer], list[object]]:
    """The servers among `given` (a session's `tools=`), and the rest, in order."""
    servers = [item for item in given if isinstance(item, McpServer)]
    return servers, [item for item in given if not isinstance(item, McpServer)]
