"""`orchestrator mcp list`, `orchestrator mcp test NAME` and `orchestrator mcp approve
NAME`: the configured MCP servers, started one at a time, their tools and what their
definitions cost, and a person's approval of a server's tools as they are now, for the
project (docs/mcp.md). `orchestrator mcp serve` is cli/mcp_serve.py's (dispatched by
cli/main.py)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

import orjson
import trio

from orchestrator.cli.env import config_layers, user_config_dir
from orchestrator.config import Config
from orchestrator.errors import ConfigError
from orchestrator.loop.compaction import CHARS_PER_TOKEN
from orchestrator.mcp import (
    Approved,
    McpServer,
    McpServerError,
    McpTool,
    McpTools,
    listing_digest,
    open_servers,
)
from orchestrator.redaction import Redactor
from orchestrator.state.mcp import McpState
from orchestrator.team.definitions import Definitions
from orchestrator.team.trust import TrustStore, fingerprint
from orchestrator.text import visible
from orchestrator.tools.base import ToolRegistry

EXIT_FAILED = 1


def run_mcp(
    args: argparse.Namespace,
    environ: Mapping[str, str],
    *,
    say: Callable[[str], None] | None = None,
) -> int:
    say = say or _print
    workspace: Path = args.workspace or Path.cwd()
    # Untrusted project settings are left out (and said so), never started: a project's
    # server is a program the repository chose.
    found = config_layers(args, environ, workspace, ask=None, untrusted="ignore")
    left_out = {_table(key): source for key, (_, source) in found.ignored.items()}
    for table, source in sorted(left_out.items()):
        if table.startswith("[mcp."):
            say(f"not started: {table} of {source}: the project is not trusted with it yet")
    servers = configured(found.config)
    if args.action in ("test", "approve"):
        chosen = [server for server in servers if server.name == args.name]
        if not chosen:
            names = ", ".join(server.name for server in servers) or "none"
            raise ConfigError(f"no MCP server {args.name!r} in the config (its servers: {names})")
        if args.action == "approve":
            return trio.run(_approve, chosen[0], workspace, environ, say)
        return trio.run(_test, chosen[0], environ, say)
    if not servers:
        say("no MCP servers configured ([mcp.servers.NAME]; docs/mcp.md)")
        return 0
    failed = 0
    for server in servers:
        failed += trio.run(_list, server, environ, say)
    return EXIT_FAILED if failed else 0


@contextlib.asynccontextmanager
async def opened_for_run(
    config: Config, say: Callable[[str], None], kept: McpState | None = None
) -> AsyncIterator[McpTools]:
    """The config's MCP servers started for a run's time (none: nothing started, the SDK
    not imported), each that did not start said in one line; `kept`: the session's, whose
    pinned servers start at their first call (mcp/source.py)."""
    async with open_servers(configured(config), os.environ, kept) as opened:
        for line in opened.failed:
            say(line)
        yield opened


def _approval(server: str, listing: str) -> str:
    """The project trust's fingerprint of a person's approval of `server`'s tools as
    listed (`listing`: mcp/pins.py `listing_digest`)."""
    return fingerprint({"mcp_tools": {"server": server, "listing": listing}})


def approved_for(workspace: Path, environ: Mapping[str, str]) -> Approved:
    """Whether a person approved a server's tools as listed, for the project of
    `workspace` (`orchestrator mcp approve`): read when a changed tool is met."""
    store = TrustStore(user_config_dir(environ))

    def approved(server: str, listing: str) -> bool:
        return store.is_trusted(workspace, _approval(server, listing))

    return approved


async def _approve(
    server: McpServer, workspace: Path, environ: Mapping[str, str], say: Callable[[str], None]
) -> int:
    async with open_servers([server], environ) as opened:
        if opened.failed:
            say(opened.failed[0])
            return EXIT_FAILED
        for tool in opened.tools:
            say(f"  {tool.name}  {_first_line(tool.description)}")
        listing = listing_digest(tool.info for tool in opened.tools)
    TrustStore(user_config_dir(environ)).trust(workspace, _approval(server.name, listing))
    say(
        f"approved for {workspace}: the {len(opened.tools)} tools of MCP server "
        f"{server.name!r} as listed now; a session refusing a changed one calls it again"
    )
    return 0


def with_mcp(
    opened: McpTools,
    tools: ToolRegistry,
    definitions: Definitions,
    redact: Redactor,
    environ: Mapping[str, str],
) -> tuple[ToolRegistry, Definitions, Redactor]:
    """The session's tools with the servers' added (the main agent's all), the agent types
    with their `mcp:SERVER/GLOB` entries made the tools' names, and the values of the
    variables the servers' settings name (`env:NAME`) redacted too."""
    types = Definitions(
        (d.model_copy(update={"tools": opened.names(d.tools)}) for d in definitions),
        sources={name: definitions.sources(name) for name in definitions.names()},
    )
    named = {name for server in opened.servers for name in server.secrets()}
    if named:
        redact = Redactor.of({*(name for name, _ in redact.secrets), *named}, environ)
    return opened.added_to(tools), types, redact


def _table(key: str) -> str:
    """`[mcp.servers.NAME]` of a key `mcp.servers.NAME.command`."""
    return "[" + ".".join(key.split(".")[:3]) + "]"


def configured(config: Config) -> list[McpServer]:
    """The servers of `[mcp.servers]`, in the order written."""
    return [McpServer.of_config(name, c) for name, c in config.mcp.servers.items()]


async def _list(server: McpServer, environ: Mapping[str, str], say: Callable[[str], None]) -> int:
    say(f"{server.name}  {server.transport}  {server.where}")
    async with open_servers([server], environ) as opened:
        for line in opened.failed:
            say(f"  {line}")
        total = 0
        for tool in opened.tools:
            tokens = tokens_of(tool)
            total += tokens
            flags = ", ".join(f for f, on in _flags(tool) if on) or "asks"
            say(f"  {tool.name}  {tokens} tokens  {flags}  {_first_line(tool.description)}")
        if not opened.failed:
            say(f"  {len(opened.tools)} tools, {total} tokens in all")
    return 1 if opened.failed else 0


async def _test(server: McpServer, environ: Mapping[str, str], say: Callable[[str], None]) -> int:
    began = time.monotonic()
    try:
        async with open_servers([server], environ) as opened:
            pass
    except McpServerError as exc:
        say(str(exc))
        return EXIT_FAILED
    if opened.failed:
        say(opened.failed[0])
        return EXIT_FAILED
    took = time.monotonic() - began
    tokens = sum(tokens_of(tool) for tool in opened.tools)
    say(
        f"MCP server {server.name!r}: ok, {len(opened.tools)} tools ({tokens} tokens), "
        f"started and listed in {took:.1f} s"
    )
    return 0


def tokens_of(tool: McpTool) -> int:
    """The tokens a tool's definition costs a request, estimated from its JSON."""
    spec = tool.spec()
    size = len(orjson.dumps([spec.name, spec.description, spec.parameters]))
    return round(size / CHARS_PER_TOKEN)


def _flags(tool: McpTool) -> list[tuple[str, bool]]:
    return [("read-only", tool.read_only), ("idempotent", tool.idempotent and not tool.read_only)]


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 80 else line[:79] + "…"


def _print(text: str) -> None:
    print(visible(text), file=sys.stdout, flush=True)
