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
import shlex
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final, Protocol, cast

import msgspec
import trio

from orchestrator.errors import ConfigError, OrchestratorError
from orchestrator.mcp.asked import Calling, Calls, callbacks
from orchestrator.mcp.servers import McpServer
from orchestrator.mcp.wire import (
    findable,
    guarded,
    http_transport,
    one_line,
    result_text,
    stderr_tail,
)
from orchestrator.tools.scripts import scripts

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


class CallResult(msgspec.Struct, frozen=True):
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
    """One started server. `list_tools` and `call` raise `McpServerError`.

    Its client lives in a task of its own (`keep`), so that a stdio server whose process
    died is started again there, once a session (`RESTARTS`): the call that found it dead
    fails saying so, and the next ones reach the new process."""

    def __init__(
        self,
        server: McpServer,
        start: Callable[[], AbstractAsyncContextManager[Client]],
        errlog: IO[str] | None,
        scripts: Callable[[], dict[str, str]] = dict,
    ) -> None:
        self.server = server
        self._start = start
        self._errlog = errlog
        self._scripts = scripts  # what its command line runs now, by path and digest
        self._ran: dict[str, str] = {}  # that, when it first started
        self._client: Client | None = None
        self._down: McpServerError | None = None  # why it is not there, once it is not
        self._generation = 0  # how many times it started
        self._crashed = trio.Event()  # set: `keep` starts it again
        self._ready = trio.Event()  # set when a restart is done, well or not
        self.calls = Calls()  # its running calls, and who answers what it asks (mcp/asked.py)
        self._listed: tuple[float, list[ToolInfo]] | None = None  # when, and its last listing
        self._told = 0  # how many times it said its tools changed
        self._nursery: trio.Nursery | None = None  # where `keep` runs (open_connection's)
        self._starting = trio.Lock()  # (calls that find it not started start it once)

    async def keep(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Starts the server and keeps its client until cancelled; starts it again when a
        call finds it dead (`_restart`). A first start that fails raises `McpServerError`."""
        while True:
            entered = False
            if self._generation == 0:
                self._ran = self._scripts()
            elif self._scripts() != self._ran:
                # Something rewrote the program it runs (an agent's tools could): that is
                # not run as the user's command.
                changed = sorted(set(self._scripts().items()) ^ set(self._ran.items()))
                self._down = McpServerError(
                    f"MCP server {self.server.name!r} exited and is not started again: "
                    f"{changed[0][0]}, which it runs, changed since the session started it"
                )
                self._ready.set()
                return
            try:
                async with self._start() as client, _told_of_changes(client):
                    entered = True
                    self._client = client
                    self._listed = None  # (a new process: its tools are listed anew)
                    self._generation += 1
                    if self._generation == 1:
                        task_status.started()
                    self._ready.set()
                    await self._crashed.wait()
                    self._client = None
            except Exception as exc:
                self._client = None
                why = f"{one_line(exc)}{stderr_tail(self._errlog)}"
                if self._generation == 0:
                    raise McpServerError(
                        f"MCP server {self.server.name!r} did not start ({self.server.where}): "
                        f"{why}"
                    ) from exc
                if not entered:
                    self._down = McpServerError(
                        f"MCP server {self.server.name!r} exited and did not start again: {why}"
                    )
                    self._ready.set()
                    return
                # (else the dead process's shutdown complained: it starts again below)
            self._crashed = trio.Event()

    async def start(self) -> None:
        """Starts the server unless it was: with the session, or at its first use (a
        lazy one, mcp/source.py). A start that failed is an `McpServerError`, said again
        at each use."""
        if self._generation:
            return
        async with self._starting:
            if self._generation == 0 and self._down is None and self._nursery is not None:
                try:
                    await self._nursery.start(self.keep)
                except McpServerError as exc:
                    self._down = exc
        if self._generation == 0:
            raise self._down or McpServerError(f"MCP server {self.server.name!r} is not running")

    def _live(self) -> Client:
        if self._client is None:
            raise self._down or McpServerError(f"MCP server {self.server.name!r} is not running")
        return self._client

    async def list_tools(self) -> list[ToolInfo]:
        told = self._told  # (a listing the server said changed while it came is not kept)
        async with self._failing("listing its tools"):
            listed = [_info(tool) for tool in await _every(self._live().list_tools, "tools")]
        self._listed = (trio.current_time(), listed) if told == self._told else None
        return listed

    async def listing(self) -> list[ToolInfo]:
        """Its tools as it last listed them, listed again when it said they changed
        (`told`), when it was started again, or once `pin_check` seconds passed since
        (0: each time): what a call's pin check reads (mcp/pins.py)."""
        listed = self._listed
        if listed is None or trio.current_time() - listed[0] >= self.server.pin_check:
            return await self.list_tools()
        return listed[1]

    async def told(self, message: object) -> None:
        """The SDK's message handler: a server that says its tools changed (on a listen
        stream, or unasked on protocols before 2026-07-28) has them listed anew."""
        from mcp_types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._listed, self._told = None, self._told + 1
        await trio.lowlevel.checkpoint()

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        progress: ProgressFn | None = None,
        calling: Calling | None = None,
        traceparent: str = "",
    ) -> CallResult:
        """`calling`: whose call (what it asks); `traceparent`: to `params._meta` (SEP-414)."""
        meta: Any = {"traceparent": traceparent} if traceparent else None
        async with self._failing(f"calling {tool}") as limit:
            client = self._live()
            with self.calls.running(calling, limit):
                result = await client.call_tool(tool, arguments, None, progress, meta=meta)
        return CallResult(result_text(self.server, tool, result), bool(result.is_error))

    def offers_resources(self) -> bool:
        """Whether the server said it has resources (its capabilities)."""
        client = self._client
        return client is not None and client.server_capabilities.resources is not None

    async def list_resources(self) -> list[tuple[str, str, str]]:
        """(uri, name, description) of each resource the server lists, then of each
        template of them (its uri a template: `docs://pages/{id}`)."""
        async with self._failing("listing its resources"):
            client = self._live()
            found = await _every(client.list_resources, "resources")
            shapes = await _every(client.list_resource_templates, "resource_templates")
        return [(str(r.uri), r.name, r.description or "") for r in found] + [
            (t.uri_template, t.name, t.description or "") for t in shapes
        ]

    async def read_resource(self, uri: str, calling: Calling | None = None) -> str:
        """The text of the resource at `uri` (a binary part named, not inlined)."""
        async with self._failing(f"reading {uri}") as limit:
            with self.calls.running(calling, limit):
                result = await self._live().read_resource(uri)
        parts = []
        for part in result.contents:
            text = getattr(part, "text", None)
            shown = f"[binary content of {part.uri} ({part.mime_type or 'unknown type'}) not shown]"
            parts.append(text if isinstance(text, str) else shown)
        return "\n".join(parts)

    @contextlib.asynccontextmanager
    async def _failing(self, doing: str) -> AsyncIterator[trio.CancelScope]:
        await self.start()  # (a lazy server, at its first use)
        generation = self._generation
        try:
            with trio.fail_after(self.server.timeout) as limit:
                yield limit
        except trio.TooSlowError:
            raise McpServerError(
                f"MCP server {self.server.name!r} timed out {doing} "
                f"(after {self.server.timeout:g} s)"
            ) from None
        except McpServerError:
            raise
        except Exception as exc:
            said = (
                f"MCP server {self.server.name!r} failed {doing}: {one_line(exc)}"
                f"{stderr_tail(self._errlog)}"
            )
            if _closed(exc) and self.server.command is not None:
                said += await self._restart(generation)
            raise McpServerError(said) from exc

    async def _restart(self, generation: int) -> str:
        """Starts the server again when it died in `generation`, the current one, and it
        was not restarted `RESTARTS` times yet (the first call to fail starts it, those
        that failed with it wait for that); what to add to the call's error."""
        if generation == self._generation <= RESTARTS and not self._crashed.is_set():
            self._ready = trio.Event()
            self._crashed.set()
        if self._crashed.is_set():
            with trio.move_on_after(self.server.timeout):
                await self._ready.wait()
        if self._down is not None:
            return f"; {self._down}"
        if self._generation > generation:
            return "; it was started again (once a session): call again"
        return "; it is not started again (it was once this session)"


async def _every(list_page: Callable[..., Any], field: str) -> list[Any]:
    """Every item of a paginated listing (`field` of each page)."""
    items: list[Any] = []
    cursor: str | None = None
    while True:
        page = await list_page(cursor=cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            return items


@contextlib.asynccontextmanager
async def _told_of_changes(client: Client) -> AsyncIterator[None]:
    """A `subscriptions/listen` stream for the changes of `client`'s server's tools, open
    for the block, where the protocol has them (2026-07-28) and the server says it sends
    them; its events reach the client's message handler (`Connection.told`). Older
    protocols send the change unasked; a server that refuses the stream is listed again
    every `pin_check` seconds only."""
    from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
    from mcp.shared.exceptions import MCPError

    tools = client.server_capabilities.tools
    async with contextlib.AsyncExitStack() as stack:
        if tools is not None and tools.list_changed:
            with contextlib.suppress(
                ListenNotSupportedError, MCPError, SubscriptionLost, TimeoutError
            ):
                await stack.enter_async_context(client.listen(tools_list_changed=True))
        yield


RESTARTS: Final = 1
"""How many times a session starts again a stdio server whose process died."""


def _closed(exc: BaseException) -> bool:
    """Whether `exc` says the connection to the server is gone (its process died)."""
    code = getattr(exc, "code", None)
    if code is not None:
        from mcp_types import CONNECTION_CLOSED

        return bool(code == CONNECTION_CLOSED)
    import anyio

    return isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError)


@contextlib.asynccontextmanager
async def open_connection(
    server: McpServer, environ: Mapping[str, str] | None = None
) -> AsyncIterator[Connection]:
    """The server (its process, or its HTTP session) for the time of the block, started
    by `Connection.start` or at its first use, stopped when the block ends. `environ`:
    where `env:NAME` values are read (None: this process's environment). A server that
    does not start is an `McpServerError`, from its start.

    A stdio server runs under a guard (mcp/_guard.py, POSIX): when this process ends,
    however it ends, the guard kills the server and whatever it started."""
    mcp = sdk()
    environ = os.environ if environ is None else environ
    with contextlib.ExitStack() as files:
        errlog: IO[str] | None = None
        if server.command is not None:
            # Its stderr kept apart (not on the terminal, under the live view), and its
            # last line told when it fails.
            errlog = files.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8"))
            command, args = guarded(server.command, server.args)
            target: Any = mcp.StdioServerParameters(
                command=command,
                args=args,
                env=server.resolved(server.env, environ),
                cwd=server.cwd,
            )
        headers = server.resolved(server.headers, environ)

        def start() -> AbstractAsyncContextManager[Client]:
            if server.command is not None:
                findable(server, target.env)  # (the guard would say it less plainly)
                transport: Any = mcp.stdio_client(target, errlog=errlog)
            else:
                transport = http_transport(server, headers)
            # No response cache: the SDK's server says `ttlMs: 0` (the SDK's cache would
            # keep nothing), and the listing the pin check reads is the connection's.
            # What the server may ask (the person, a model, the roots): mcp/asked.py.
            asked = callbacks(server, connection.calls)
            return cast(
                "AbstractAsyncContextManager[Client]",
                mcp.Client(
                    transport,
                    cache=None,
                    read_timeout_seconds=server.timeout,
                    message_handler=connection.told,
                    **asked,
                ),
            )

        def ran() -> dict[str, str]:
            if server.command is None:
                return {}
            line = shlex.join([server.command, *server.args])
            return scripts(line, Path(server.cwd or os.getcwd()))

        connection = Connection(server, start, errlog, ran)
        raised: list[BaseException] = []  # what the block raised, if it did
        try:
            async with trio.open_nursery() as nursery:
                connection._nursery = nursery
                try:
                    yield connection
                except BaseException as exc:
                    raised.append(exc)
                    raise
                finally:
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # The nursery wraps what the block raised, or why the server did not start:
            # the caller gets it bare, as it would without a server (a ConfigError, a
            # Ctrl+C).
            bare = raised or [e for e in _leaves(group) if isinstance(e, McpServerError)]
            if bare and _only(group, bare[0]):
                raise bare[0] from None
            raise


def _only(group: BaseExceptionGroup[BaseException], error: BaseException) -> bool:
    """Whether `group` holds `error` and nothing else but cancellations."""
    leaves = _leaves(group)
    cancelled = trio.Cancelled
    return error in leaves and all(e is error or isinstance(e, cancelled) for e in leaves)


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        exc = pending.pop()
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(exc.exceptions)
        else:
            leaves.append(exc)
    return leaves


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
