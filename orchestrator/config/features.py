"""The tables of the config file for the optional features: MCP servers (`[mcp]`,
docs/mcp.md), hooks (`[[hooks]]`, docs/hooks.md) and traces (`[telemetry]`,
docs/tracing.md)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from orchestrator.config.tables import DAY, TOKENS, _Strict


class McpServerConfig(_Strict, frozen=True):
    """`[mcp.servers.NAME]`: one MCP server whose tools the session's agents may use
    (docs/mcp.md): a command run over stdio (`command`, `args`, `env`, `cwd`) or a
    streamable HTTP endpoint (`url`, `headers`). A value of `env` or `headers` written
    `env:NAME` is the environment variable NAME's value, read when the server starts and
    redacted like a provider's key. `tools`: globs of the server's tools the session takes
    (none: all); `timeout`: seconds a call (and the start) may take; `max_output`: the
    characters of a result past which it is refused as oversized; `sampling`: whether the
    server may ask for a model's completion (answered by the calling agent's model);
    `pin_check`: at most how many seconds a call's check of its tool against the
    session's pin may use the server's last listing (0: list before every call);
    `background`: whether its tools' calls may run in the background (docs/tools.md)."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    tools: tuple[str, ...] = ()
    timeout: float = Field(default=60.0, gt=0, le=DAY)
    max_output: int = Field(default=100_000, ge=100, le=TOKENS)
    sampling: bool = False
    pin_check: float = Field(default=60.0, ge=0, le=DAY)
    background: bool = False

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "give either command (a server run over stdio) or url (streamable HTTP), "
                "not both and not neither"
            )
        stdio_only = [k for k in ("args", "env", "cwd") if k in self.model_fields_set]
        if self.url is not None and stdio_only:
            raise ValueError(f"{', '.join(stdio_only)}: only for a command (stdio) server")
        if self.command is not None and "headers" in self.model_fields_set:
            raise ValueError("headers: only for a url (streamable HTTP) server")
        if self.command is not None and not self.command.strip():
            raise ValueError("command must not be blank")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url {self.url!r} is not an http:// or https:// address")
        for key, value in (*self.env.items(), *self.headers.items()):
            if value.startswith("env:") and not value[4:].strip():
                raise ValueError(f"{key} = {value!r} names no environment variable")
        return self


class McpConfig(_Strict, frozen=True):
    """`[mcp]`: the MCP servers (`[mcp.servers.NAME]`); docs/mcp.md."""

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)

    @field_validator("servers")
    @classmethod
    def _names(cls, servers: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in servers:
            if not _MCP_NAME.fullmatch(name) or "__" in name:
                raise ValueError(
                    f"{name!r} is not a server name (letters, digits, '_' and '-', up to 32, "
                    "no '__': a tool is shown to the model as SERVER__TOOL)"
                )
        return servers


_MCP_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")

HookEventName = Literal[
    "session_start",
    "session_end",
    "user_message",
    "pre_tool",
    "post_tool",
    "task_delegated",
    "task_settled",
    "pre_compact",
    "post_compact",
    "stop",
    "waiting",
]
"""When a hook runs (docs/hooks.md)."""


class HookConfig(_Strict, frozen=True):
    """One `[[hooks]]` entry: a command run at `event` (docs/hooks.md), given the event as
    JSON on stdin; `tools` and `roles` (globs; empty: every one) narrow when it runs."""

    event: HookEventName
    command: str
    tools: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    timeout: float = Field(default=30.0, gt=0, le=DAY)
    fail_closed: bool = False  # a `pre_tool` hook that fails or times out refuses the call

    @model_validator(mode="after")
    def _sound(self) -> HookConfig:
        if not self.command.strip():
            raise ValueError("command must not be blank")
        if self.fail_closed and self.event != "pre_tool":
            raise ValueError("fail_closed: only for a pre_tool hook")
        return self


class TelemetryConfig(_Strict, frozen=True):
    """`[telemetry]`: OpenTelemetry traces and metrics of each session (docs/tracing.md),
    exported over OTLP/HTTP with the `otel` extra installed. `enabled` turns them on (as
    does `OTEL_TRACES_EXPORTER=otlp`; `OTEL_SDK_DISABLED=true` turns them off); `endpoint`
    is the collector's base URL (empty: the `OTEL_EXPORTER_OTLP_*` variables', else
    http://localhost:4318); `capture_content`: tool calls' arguments and results on their
    spans, redacted; `metrics`: tokens, cost and tool latency as metrics too."""

    enabled: bool = False
    endpoint: str = ""
    capture_content: bool = False
    metrics: bool = True
