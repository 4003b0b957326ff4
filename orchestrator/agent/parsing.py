"""A call of the model's, parsed: its tool and validated arguments, or the error the model
should read instead."""

from __future__ import annotations

import orjson
from pydantic import BaseModel, ValidationError

from orchestrator.messages import ToolCall
from orchestrator.tools.base import AnyTool, ToolRegistry

Parsed = tuple[AnyTool, BaseModel] | str
"""A call's tool and validated arguments, or the error the model should see instead."""


class Unapproved(str):
    """The error of a call refused for want of anyone to approve it: its result's status
    is `unapproved`, a fact the session's outcome counts (never read back from text)."""


def parse_call(call: ToolCall, tools: ToolRegistry) -> Parsed:
    """The tool and validated arguments of a call, or the error the model should see."""
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(tools.names()) or "none"
        return f"unknown tool {call.name!r}; available tools: {known}"
    try:
        raw = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError as exc:
        return f"arguments of {call.name} are not valid JSON ({exc}): {call.arguments[:200]!r}"
    if not isinstance(raw, dict):
        return f"arguments of {call.name} must be a JSON object, got {type(raw).__name__}"
    fields = tool.args_model.model_fields
    accepted = set(fields) | {f.alias for f in fields.values() if f.alias}
    unknown = [key for key in raw if key not in accepted]
    if unknown:
        # A misspelt argument silently ignored would run the call with a default instead.
        names = ", ".join(repr(key) for key in unknown)
        expected = ", ".join(f.alias or name for name, f in fields.items()) or "none"
        return f"unknown argument {names} for {call.name}; its arguments are: {expected}"
    try:
        return tool, tool.args_model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
            for err in exc.errors()
        )
        return f"invalid arguments for {call.name}: {problems}"
