"""A running MCP server: started through the official `mcp` SDK (an optional extra,
imported here only, when a session opens a server), its tools listed, its tools called.
Everything of the protocol is the SDK's; this module maps its failures to one line a
person can act on (`McpServerError`), which names the server.

The SDK runs on anyio, so under trio as it is: `open_connection` is entered and left in
the task that owns the session's resources (host/run.py), and a call cancelled by trio
is cancelled at the server (the SDK sends `notifications/cancelled`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Protocol

import trio

from orchestrator.errors import ConfigError, OrchestratorError
from orchestrator.mcp.servers import McpServer

if TYPE_CHECKING:
    from mcp import Client

INSTALL_HINT = "pip install 'orchestrator[mcp]'"


class ProgressFn(Protocol):
    """Told of a call's progress notifications (the SDK's `ProgressFnT`)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


class McpServerError(OrchestratorError):
    """An MCP server failed: it did not start, it exited, it timed out, or what it sent
    back was unusable. The message is one line that names the server."""


@dataclass(frozen=True)
class ToolInfo:
    """One tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    idempotent: bool
    destructive: bool
    output_schema: dict[str, Any] | None = None


@dataclass(frozen=True)
class CallResult:
    text: str
    is_error: bool


def sdk() -> Any:
    """The `mcp` package, or a `ConfigError` saying how to install it."""
    try:
        import mcp
    except ImportError:
        raise ConfigError(
            f"MCP servers are configured, but the MCP SDK is not installed: {INSTALL_HINT}"
        ) from None
    return mcp


class Connection:
    """One started server. `list_tools` and `call` raise `McpServerError`."""

    def __init__(self, server: McpServer, client: Client, errlog: IO[str] | None) -> None:
        self.server = server
        self._client = client
        self._errlog = errlog

    async def list_tools(self) -> list[ToolInfo]:
        tools: list[ToolInfo] = []
        cursor: str | None = None
        async with self._failing("listing its tools"):
            while True:
                page = await self._client.list_tools(cursor=cursor)
                tools.extend(_info(tool) for tool in page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools

    async def call(
        self, tool: str, arguments: dict[str, Any], progress: ProgressFn | None = None
    ) -> CallResult:
        async with self._failing(f"calling {tool}"):
            result = await self._client.call_tool(tool, arguments, progress_callback=progress)
        return CallResult(_text(self.server, tool, result), bool(result.is_error))

    @contextlib.asynccontextmanager
    async def _failing(self, doing: str) -> AsyncIterator[None]:
        try:
            with trio.fail_after(self.server.timeout):
                yield
        except trio.TooSlowError:
            raise McpServerError(
                f"MCP server {self.server.name!r} timed out {doing} "
                f"(after {self.server.timeout:g} s)"
            ) from None
        except McpServerError:
            raise
        except Exception as exc:
            raise McpServerError(
                f"MCP server {self.server.name!r} failed {doing}: {_one_line(exc)}"
                f"{_stderr_tail(self._errlog)}"
            ) from exc


@contextlib.asynccontextmanager
async def open_connection(
    server: McpServer, environ: Mapping[str, str] | None = None
) -> AsyncIterator[Connection]:
    """The server started (its process, or its HTTP session) for the time of the block,
    stopped when it ends. `environ`: where `env:NAME` values are read (None: this
    process's environment). A server that does not start is an `McpServerError`."""
    mcp = sdk()
    environ = os.environ if environ is None else environ
    with contextlib.ExitStack() as files:
        errlog: IO[str] | None = None
        if server.command is not None:
            # Its stderr kept apart (not on the terminal, under the live view), and its
            # last line told when it fails.
            errlog = files.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8"))
            target: Any = mcp.StdioServerParameters(
                command=server.command,
                args=list(server.args),
                env=server.resolved(server.env, environ),
                cwd=server.cwd,
            )
            transport: Any = mcp.stdio_client(target, errlog=errlog)
        else:
            transport = _http(server, server.resolved(server.headers, environ))
        # No response cache: a tool list is asked for once per session, and always anew.
        client = mcp.Client(transport, cache=None, read_timeout_seconds=server.timeout)
        connection = Connection(server, client, errlog)
        raised: list[BaseException] = []  # what the block raised, if it did
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    # (Its task group lives on past this line: no cancel scope may end
                    # around it, so the start's timeout is the SDK's `read_timeout_seconds`.)
                    await stack.enter_async_context(client)
                except Exception as exc:
                    raise McpServerError(
                        f"MCP server {server.name!r} did not start ({server.where}): "
                        f"{_one_line(exc)}{_stderr_tail(errlog)}"
                    ) from exc
                try:
                    yield connection
                except BaseException as exc:
                    raised.append(exc)
                    raise
        except BaseExceptionGroup as group:
            # The SDK's task group wraps what the block raised: the caller gets it bare,
            # as it would without a server (a ConfigError, a Ctrl+C).
            if raised and _only(group, raised[0]):
                raise raised[0] from None
            raise


def _only(group: BaseExceptionGroup[BaseException], error: BaseException) -> bool:
    """Whether `group` holds `error` and nothing else but cancellations."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        exc = pending.pop()
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(exc.exceptions)
        else:
            leaves.append(exc)
    cancelled = trio.Cancelled
    return error in leaves and all(e is error or isinstance(e, cancelled) for e in leaves)


def _http(server: McpServer, headers: dict[str, str]) -> Any:
    """The streamable HTTP transport to `server.url`, its client sending `headers`."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    @contextlib.asynccontextmanager
    async def streams() -> AsyncIterator[Any]:
        http = create_mcp_http_client(headers=headers)
        async with http, streamable_http_client(server.url or "", http_client=http) as pair:
            yield pair

    return streams()


def _info(tool: Any) -> ToolInfo:
    notes = tool.annotations
    read_only = bool(notes and notes.read_only_hint)
    return ToolInfo(
        name=tool.name,
        description=(tool.description or "").strip(),
        input_schema=dict(tool.input_schema or {"type": "object"}),
        read_only=read_only,
        # A tool that changes nothing can run again; the spec's default for a writer is
        # "not idempotent", and its default for destructive is "may be".
        idempotent=read_only or bool(notes and notes.idempotent_hint),
        destructive=not read_only and (notes is None or notes.destructive_hint is not False),
        output_schema=None if tool.output_schema is None else dict(tool.output_schema),
    )


def _text(server: McpServer, tool: str, result: Any) -> str:
    """The result's content as the model reads it: text as it is, structured content as
    JSON, anything else (an image, a resource) named, not inlined."""
    parts: list[str] = []
    for block in result.content or ():
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{kind or 'unknown'} content from {server.name}/{tool} not shown]")
    if not parts and result.structured_content is not None:
        import orjson

        parts.append(orjson.dumps(result.structured_content).decode())
    return "\n".join(parts)


def _one_line(exc: BaseException) -> str:
    """The innermost failure of `exc` (through exception groups and causes), as one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split()) or type(exc).__name__
    if (
        isinstance(exc, OSError | ValueError | LookupError | RuntimeError)
        and type(exc).__name__ not in text
    ):
        text = f"{type(exc).__name__}: {text}"
    return text[:300]


def _stderr_tail(errlog: IO[str] | None) -> str:
    """`; its stderr said: LAST LINE` when the server wrote something there."""
    if errlog is None:
        return ""
    try:
        errlog.flush()
        errlog.seek(0)
        lines = [line.strip() for line in errlog.read()[-4000:].splitlines() if line.strip()]
    except (OSError, ValueError):
        return ""
    return f"; its stderr said: {lines[-1][:300]}" if lines else ""
