"""An MCP server as the session knows it before it runs: how to start it (a command over
stdio, or a streamable HTTP address), which of its tools the session takes, and its
limits. A value, made in code (`McpServer.stdio`, `McpServer.http`) or from the
configuration's `[mcp.servers.NAME]` (`McpServer.of_config`); nothing starts until a
session opens it (mcp/connection.py).

Values written `env:NAME` (in `env` and `headers`) are references to the environment,
read when the server starts, never kept: what a server object shows (`repr`, `orchestrator
mcp list`) holds the references only, and `secrets()` names the variables whose values
the session redacts.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from orchestrator.config import McpServerConfig
from orchestrator.errors import ConfigError

SEPARATOR: Final = "__"
"""Between a server's name and its tool's in the name the model sees: `docs__search`."""
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what both providers accept
_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")
ENV_PREFIX: Final = "env:"
PIN_CHECK: Final = 60.0
"""Seconds a server's listing of its tools serves the pin check (docs/mcp.md)."""
SELECTOR_PREFIX: Final = "mcp:"
"""An agent type's `tools` entry `mcp:SERVER/GLOB` names that server's tools matching GLOB."""


@dataclass(frozen=True)
class McpServer:
    """One MCP server. Give it to `orc.run(..., tools=[server, ...])` (the main agent
    gets its tools), and name the tools an agent type may use in the type's `tools`
    (`AgentDefinition(tools=[*server.allow("search*")])`, or `"mcp:NAME/GLOB"` in an
    agent file): other types never see them.

    `tools`: globs of the server's tool names the session takes (empty: all);
    `timeout`: the seconds its start, and each call, may take; `max_output`: the
    characters of a call's result past which it is refused as oversized; `sampling`:
    whether it may ask for a model's completion (`sampling/createMessage`), answered by
    the calling agent's model, its usage counted (refused otherwise); `pin_check`: at
    most how many seconds a call's check of its tool against the session's pin may use
    the server's last listing of its tools (0: list them before every call; mcp/pins.py);
    `background`: whether a call of its tools may run in the background, as a task
    (its tools get a `background` flag; docs/tools.md)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    tools: tuple[str, ...] = ()
    timeout: float = 60.0
    max_output: int = 100_000
    sampling: bool = False
    pin_check: float = PIN_CHECK
    background: bool = False

    def __post_init__(self) -> None:
        if not _SERVER_NAME.fullmatch(self.name) or SEPARATOR in self.name:
            raise ConfigError(
                f"{self.name!r} is not an MCP server name (letters, digits, '_' and '-', up "
                "to 32, no '__': a tool is shown to the model as SERVER__TOOL)"
            )
        if (self.command is None) == (self.url is None):
            raise ConfigError(
                f"MCP server {self.name!r}: give either a command (stdio) or a url "
                "(streamable HTTP)"
            )
        # Frozen copies: the object is a value, shared by the sessions given it.
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        object.__setattr__(self, "headers", MappingProxyType(dict(self.headers)))
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "tools", tuple(self.tools))

    @classmethod
    def stdio(
        cls,
        name: str,
        command: str,
        args: tuple[str, ...] | list[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        tools: tuple[str, ...] | list[str] = (),
        timeout: float = 60.0,
        max_output: int = 100_000,
        sampling: bool = False,
        pin_check: float = PIN_CHECK,
        background: bool = False,
    ) -> McpServer:
        """A server the session starts as a child process and talks to over its stdin
        and stdout. `env`: variables set for it (`"env:NAME"` reads NAME), beside the
        few the SDK passes on (HOME, PATH, ...): no other secret reaches it."""
        return cls(
            name,
            command=command,
            args=tuple(args),
            env=env or {},
            cwd=cwd,
            tools=tuple(tools),
            timeout=timeout,
            max_output=max_output,
            sampling=sampling,
            pin_check=pin_check,
            background=background,
        )

    @classmethod
    def http(
        cls,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        tools: tuple[str, ...] | list[str] = (),
        timeout: float = 60.0,
        max_output: int = 100_000,
        sampling: bool = False,
        pin_check: float = PIN_CHECK,
        background: bool = False,
    ) -> McpServer:
        """A server at a streamable HTTP address (`https://host/mcp`). `headers`: sent
        with every request (`{"Authorization": "env:DOCS_AUTH"}`)."""
        return cls(
            name,
            url=url,
            headers=headers or {},
            tools=tuple(tools),
            timeout=timeout,
            max_output=max_output,
            sampling=sampling,
            pin_check=pin_check,
            background=background,
        )

    @classmethod
    def of_config(cls, name: str, config: McpServerConfig) -> McpServer:
        """The server `[mcp.servers.NAME]` describes."""
        return cls(
            name,
            command=config.command,
            args=config.args,
            env=config.env,
            cwd=config.cwd,
            url=config.url,
            headers=config.headers,
            tools=config.tools,
            timeout=config.timeout,
            max_output=config.max_output,
            sampling=config.sampling,
            pin_check=config.pin_check,
            background=config.background,
        )

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    @property
    def where(self) -> str:
        """What it runs or where it is, for people: the command line, or the url."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return self.url or ""

    def secrets(self) -> tuple[str, ...]:
        """The environment variables its values name (`env:NAME`): their values are
        redacted wherever the session shows or keeps text."""
        values = [*self.env.values(), *self.headers.values()]
        return tuple(sorted({v[len(ENV_PREFIX) :] for v in values if v.startswith(ENV_PREFIX)}))

    def resolved(self, values: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
        """`values` (its `env` or `headers`) with each `env:NAME` read from `environ`; an
        unset variable is a `ConfigError` naming the server and the variable."""
        out = {}
        for key, value in values.items():
            if value.startswith(ENV_PREFIX):
                variable = value[len(ENV_PREFIX) :]
                if variable not in environ:
                    raise ConfigError(
                        f"MCP server {self.name!r}: {key} names the environment variable "
                        f"{variable}, which is not set"
                    )
                value = environ[variable]
            out[key] = value
        return out

    def takes(self, tool: str) -> bool:
        """Whether the session takes the server's tool named `tool` (its `tools` globs)."""
        return not self.tools or any(fnmatch.fnmatchcase(tool, g) for g in self.tools)

    def allow(self, *globs: str) -> tuple[str, ...]:
        """The entries of an agent type's `tools` that give it this server's tools
        matching `globs` (all of them without any): `("mcp:docs/search*",)`."""
        return tuple(selector(self.name, g) for g in globs or ("*",))

    def __repr__(self) -> str:
        # The references as written; a literal header's value is not shown at all.
        headers = {key: v if v.startswith(ENV_PREFIX) else "…" for key, v in self.headers.items()}
        shown = f"url={self.url!r}, headers={headers!r}" if self.url else f"command={self.where!r}"
        return f"McpServer({self.name!r}, {shown})"


def tool_name(server: str, tool: str) -> str:
    """The name the model sees for `server`'s tool `tool`, or a `ConfigError` when that is
    not a name providers accept (`[A-Za-z0-9_-]{1,64}`)."""
    name = f"{server}{SEPARATOR}{tool}"
    if not _TOOL_NAME.fullmatch(name):
        raise ConfigError(
            f"MCP server {server!r}: its tool {tool!r} cannot be offered to a model as "
            f"{name!r} (1 to 64 letters, digits, '_' or '-')"
        )
    return name


def selector(server: str, glob: str) -> str:
    return f"{SELECTOR_PREFIX}{server}/{glob}"


def parse_selector(entry: str) -> tuple[str, str] | None:
    """(server, glob) of an agent type's `mcp:SERVER/GLOB` entry; None for a plain
    tool name."""
    if not entry.startswith(SELECTOR_PREFIX):
        return None
    server, slash, glob = entry[len(SELECTOR_PREFIX) :].partition("/")
    if not slash or not server or not glob:
        raise ConfigError(f"{entry!r} is not mcp:SERVER/TOOL (TOOL may be a glob: mcp:docs/*)")
    return server, glob
