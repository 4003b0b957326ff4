"""What an MCP server may ask the client while one of its tools runs (docs/mcp.md, "What
a server may ask"): the person (elicitation, mcp/elicit.py), a model's completion
(sampling, mcp/sampling.py), and the client's roots (here). The SDK receives the requests
and calls the callbacks `callbacks` gives it; this module finds which agent's call a
request belongs to and hands it to the session's answers (`ServerAsks`), bound once the
session is wired (`McpTools.answering`).

Which call: a call sets `CALLING` around itself. On the 2026-07-28 protocol a server's
question comes back as the call's `InputRequiredResult`, which the SDK answers in the
calling task, where `CALLING` is the call's; on older protocols the request arrives in
the SDK's own task, and the call is the one the connection has running (the oldest, when
several run at once).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import trio

from orchestrator.state.events import EventSink

if TYPE_CHECKING:
    from orchestrator.mcp.servers import McpServer
    from orchestrator.models.base import Model
    from orchestrator.tools.base import ToolContext


@dataclass
class Calling:
    """One running call of a server's tool: whose (`agent`, its call `ref`), which tool
    (the server's name for it), where the agent works (its workspace, and its task's
    write scope: None, the whole workspace), and where its records go (`events`: the
    session's sink, which journals, redacts and shows them; None: the session's journal
    as it is), and the agent's model (`model`: its calls take the session's model-call
    slots; None: no model can answer). `unanswered`: set when the server asked the
    person and nobody could answer (the call's result says so)."""

    agent: str
    ref: str
    tool: str
    workspace: Path
    write_scope: tuple[str, ...] | None = None
    events: EventSink | None = field(default=None, compare=False)
    unanswered: str = field(default="", compare=False)
    # The call's time limit (the server's `timeout`), paused while the client answers.
    limit: trio.CancelScope | None = field(default=None, compare=False)
    model: Model | None = field(default=None, compare=False)

    @classmethod
    def of(cls, ctx: ToolContext, tool: str) -> Calling:
        """The call `ctx` runs, of the server's tool `tool`."""
        root = ctx.workspace.root
        return cls(ctx.agent, ctx.call, tool, root, ctx.write_scope, ctx.events, model=ctx.model)


@contextlib.contextmanager
def paused(calling: Calling) -> Iterator[None]:
    """The call's time limit stopped while the block runs (a person answering, the
    agent's model completing): the server's `timeout` is for the server's own time."""
    limit = calling.limit
    if limit is None:
        yield
        return
    left = limit.deadline - trio.current_time()
    limit.deadline = math.inf
    try:
        yield
    finally:
        limit.deadline = trio.current_time() + left


CALLING: contextvars.ContextVar[Calling | None] = contextvars.ContextVar(
    "orchestrator_mcp_calling", default=None
)


class ServerAsks(Protocol):
    """The session's answers to what its servers ask (mcp/answers.py `Answers`)."""

    async def elicit(self, server: McpServer, calling: Calling, params: Any) -> Any: ...

    async def sample(self, server: McpServer, calling: Calling, params: Any) -> Any: ...


class Calls:
    """The calls a connection has running, and the session's answers once bound."""

    def __init__(self) -> None:
        self.asks: ServerAsks | None = None
        self._running: list[Calling] = []

    @contextlib.contextmanager
    def running(self, calling: Calling | None, limit: trio.CancelScope) -> Iterator[None]:
        if calling is None:
            yield
            return
        calling.limit = limit
        token = CALLING.set(calling)
        self._running.append(calling)
        try:
            yield
        finally:
            self._running.remove(calling)
            CALLING.reset(token)

    def current(self) -> Calling | None:
        return CALLING.get() or (self._running[0] if self._running else None)


def callbacks(server: McpServer, calls: Calls) -> dict[str, Any]:
    """The SDK client's keyword arguments that answer `server`'s requests. Sampling is
    offered to every server, and refused, saying how to allow it, to one whose config
    does not (a server told the client has no sampling fails less plainly)."""
    import mcp_types as types

    def refused(what: str) -> Any:
        return types.ErrorData(code=types.INVALID_REQUEST, message=what)

    async def elicit(context: Any, params: Any) -> Any:
        calling = calls.current()
        if calls.asks is None or calling is None:
            return refused("the client has nobody to ask (no session's call is running)")
        return await calls.asks.elicit(server, calling, params)

    async def sample(context: Any, params: Any) -> Any:
        calling = calls.current()
        if not server.sampling:
            return refused(
                f"sampling is not allowed for MCP server {server.name!r} (`sampling = true` "
                f"in [mcp.servers.{server.name}] allows it)"
            )
        if calls.asks is None or calling is None:
            return refused("the client has no model to ask (no session's call is running)")
        if calling.model is None:
            return refused("the client has no model to ask (the call's agent has none)")
        return await calls.asks.sample(server, calling, params)

    async def roots(context: Any) -> Any:
        calling = calls.current()
        return types.ListRootsResult(
            roots=[types.Root(uri=uri, name=name) for uri, name in roots_of(calling)]
        )

    return {
        "elicitation_callback": elicit,
        "sampling_callback": sample,
        "list_roots_callback": roots,
    }


def roots_of(calling: Calling | None) -> list[tuple[str, str]]:
    """The roots offered to a server: (file URI, name) of each path of the calling
    agent's write scope (a task's; a glob pattern's by the directories before its first
    wildcard), else of its workspace (the main agent's, or a task that writes nowhere);
    none outside a call (nothing to say yet)."""
    if calling is None:
        return []
    root = calling.workspace.resolve()
    if not calling.write_scope:
        return [(root.as_uri(), "workspace")]
    found: dict[str, str] = {}
    for path in calling.write_scope:
        fixed = path.split("*")[0].split("?")[0].split("[")[0]
        where = fixed if fixed == path else fixed.rpartition("/")[0]
        found.setdefault((root / where).resolve().as_uri(), where or "workspace")
    return list(found.items())
