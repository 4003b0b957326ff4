"""The plain parts of a connection to an MCP server (mcp/connection.py): how a stdio
server is started under its guard (mcp/_guard.py) and a streamable HTTP one reached, and
how what a server sends back, or why it failed, is told in a line a person can read."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import IO, Any, Final

from orchestrator.mcp.servers import McpServer


def guarded(command: str, args: tuple[str, ...]) -> tuple[str, list[str]]:
    """The command line that runs `command` under the guard (mcp/_guard.py), where there
    are process groups; elsewhere it as it is."""
    if os.name != "posix":
        return command, list(args)
    return sys.executable, ["-I", "-S", str(GUARD), command, *args]


GUARD: Final = Path(__file__).with_name("_guard.py")


def findable(server: McpServer, env: Mapping[str, str]) -> None:
    """A `FileNotFoundError` when `server`'s program is nowhere its guard would look."""
    command = server.command or ""
    if os.sep in command and server.cwd and not os.path.isabs(command):
        command = os.path.join(server.cwd, command)
    if shutil.which(command, path=env.get("PATH", os.environ.get("PATH"))) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), server.command)


def http_transport(server: McpServer, headers: dict[str, str]) -> Any:
    """The streamable HTTP transport to `server.url`, its client sending `headers`."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    @contextlib.asynccontextmanager
    async def streams() -> AsyncIterator[Any]:
        http = create_mcp_http_client(headers=headers)
        async with http, streamable_http_client(server.url or "", http_client=http) as pair:
            yield pair

    return streams()


def result_text(server: McpServer, tool: str, result: Any) -> str:
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


def one_line(exc: BaseException) -> str:
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


def stderr_tail(errlog: IO[str] | None) -> str:
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
