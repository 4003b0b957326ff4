"""An MCP server's tool as a tool like any other (tools/base.py): the model sees it as
`SERVER__TOOL` with the server's description and input schema; its flags come from the
server's annotations (`readOnlyHint`: read-only, so allowed unasked and run again after a
crash; `idempotentHint`: run again after a crash; otherwise asked about, and reported
`interrupted` when a crash cut it off). Its calls go through the turn loop's one path:
journaled before they are sent, their result journaled after.

A traced run's call carries its span's W3C `traceparent` in the request's `params._meta`
(docs/tracing.md), so the server's spans join the session's trace under the call.

Before each call the tool's definition, as the server last listed it, is checked against
the session's pin (mcp/pins.py): a tool changed since is not called.

A server configured with `background` (docs/tools.md, "Calls in the background") gives
its tools a `background` flag: such a call runs as a task of kind `tool`, its progress
notifications its progress messages, and cancelling the task cancels the call at the
server (the SDK sends `notifications/cancelled`).

A failure of the server (it exited, timed out, sent what cannot be read, or too much) is
a tool error the agent reads, in one line that names the server; the session goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pydantic
from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from orchestrator.errors import ToolFailed
from orchestrator.mcp.asked import Calling
from orchestrator.mcp.connection import Connection, McpServerError, ToolInfo
from orchestrator.mcp.pins import Pins
from orchestrator.mcp.servers import tool_name
from orchestrator.models.base import ToolSpec
from orchestrator.tools.base import Tool, ToolContext, ToolOutput
from orchestrator.tools.functions import BACKGROUND_FIELD

_FLAG = cast("FieldInfo", BACKGROUND_FIELD[1])
BACKGROUND = {"type": "boolean", "default": False, "description": _FLAG.description}
"""The `background` flag in a tool's schema, as a function tool's is."""


class McpTool(Tool[BaseModel]):
    """One tool of a started server (`connection`), as `info` defines it (as listed, or
    as the session pinned it); `pins`: the session's, which each call is checked
    against (None: no check, as `orchestrator mcp list` lists)."""

    def __init__(
        self,
        connection: Connection,
        info: ToolInfo,
        pins: Pins | None = None,
        trace_parent: Callable[[str], str] | None = None,
    ) -> None:
        self.connection = connection
        self.info = info
        self.pins = pins
        self.trace_parent = trace_parent  # a traced run's `traceparent` of a call, by its ref
        self.server = connection.server.name
        self.name = tool_name(self.server, info.name)
        self.description = info.description or f"{info.name}, a tool of MCP server {self.server}"
        # (A tool of its own named `background` keeps it, and is not run there.)
        properties = info.input_schema.get("properties")
        self.background = connection.server.background and "background" not in (
            properties if isinstance(properties, dict) else {}
        )
        self.args_model = _args_model(self.name, info.input_schema, self.background)
        self.read_only = info.read_only
        self.idempotent = info.idempotent
        self.interruptible = info.read_only
        self.reports_progress = True
        self.deferrable = True  # past a budget, loaded on demand (tools/deferred.py)
        parameters = dict(info.input_schema)
        parameters.setdefault("type", "object")
        if self.background:
            parameters["properties"] = {**(properties or {}), "background": BACKGROUND}
        self._spec = ToolSpec(name=self.name, description=self.description, parameters=parameters)

    def spec(self) -> ToolSpec:
        return self._spec  # the server's schema as it sent it, not one pydantic remade

    def __repr__(self) -> str:
        return f"<McpTool {self.name}>"

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        arguments = args.model_dump(by_alias=True, exclude_unset=True, exclude={"background"})

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            percent = 100 * progress / total if total else None
            await ctx.report_progress(message or f"{progress:g}", percent)

        try:
            if self.pins is not None:
                refused = await self.pins.check(self.connection, self.info.name, ctx.agent)
                if refused is not None:
                    raise ToolFailed(refused)
            calling = Calling.of(ctx, self.info.name)
            traced = self.trace_parent(ctx.call) if self.trace_parent and ctx.call else ""
            result = await self.connection.call(
                self.info.name, arguments, progress, calling, traceparent=traced
            )
        except McpServerError as exc:
            raise ToolFailed(str(exc)) from exc
        if calling.unanswered:  # it asked the person, and nobody could answer (mcp/elicit.py)
            raise ToolFailed(calling.unanswered)
        limit = self.connection.server.max_output
        if len(result.text) > limit:
            raise ToolFailed(
                f"MCP server {self.server!r}: {self.info.name} returned {len(result.text)} "
                f"characters, over its limit of {limit} (max_output); ask for less"
            )
        return ToolOutput.error(result.text) if result.is_error else ToolOutput(result.text)


def _args_model(name: str, schema: dict[str, Any], background: bool) -> type[BaseModel]:
    """A model whose fields are the schema's top-level properties, by their own names
    (aliases), so the turn loop refuses an argument the tool does not take, and misses a
    required one; their values are checked by the server, against its own schema. With
    `background`, our flag too (not sent to the server)."""
    properties = schema.get("properties")
    required = set(schema.get("required") or ())
    fields: dict[str, Any] = {}
    if isinstance(properties, dict):
        for index, key in enumerate(properties):
            default = ... if key in required else None
            fields[f"p{index}"] = (Any, Field(default, alias=str(key)))
    if background:
        fields["background"] = BACKGROUND_FIELD
    return _model(name, tuple(fields.items()))


def _model(name: str, fields: tuple[tuple[str, Any], ...]) -> type[BaseModel]:
    config = ConfigDict(extra="forbid", protected_namespaces=())
    return pydantic.create_model(f"{name}Args", __config__=config, **dict(fields))
