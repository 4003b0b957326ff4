"""A call of the model's, parsed and permitted: `Ready` to run with its tool and validated
arguments, or `Refused` or `Unapproved` with the error the model reads instead."""

from __future__ import annotations

import weakref

import msgspec
import orjson
from pydantic import BaseModel, ValidationError

from orchestrator.agent.recovery import too_long
from orchestrator.messages import ToolCall
from orchestrator.tools.base import AnyTool, ToolRegistry


class Ready(msgspec.Struct, frozen=True):
    """A call that may run: its tool and its validated arguments."""

    tool: AnyTool
    args: BaseModel


class Refused(msgspec.Struct, frozen=True):
    """A call that will not run (an unknown tool, malformed arguments, refused by the
    agent's guard or by the permission policy): its result is this error."""

    error: str


class Unapproved(msgspec.Struct, frozen=True):
    """A call refused for want of anyone to approve it: its result's status is
    `unapproved`, a fact the session's outcome counts (never read back from text)."""

    error: str


class Parked(msgspec.Struct, frozen=True):
    """A call whose approver answered "later": it neither runs nor gets a result now; it
    waits, open, for a person's decision (state/approvals.py)."""


# Not journaled: what the turn loop decides of a call before it runs (the call's start
# and its result are what the journal keeps).
Parsed = Ready | Refused | Unapproved | Parked
"""What becomes of a call: it runs, its result is an error the model reads, or it waits
for a person's decision."""


# The argument names each tool's model accepts (its fields and their aliases), found once
# per model rather than on every call.
_ACCEPTED: weakref.WeakKeyDictionary[type[BaseModel], frozenset[str]] = weakref.WeakKeyDictionary()


def _accepted(args_model: type[BaseModel]) -> frozenset[str]:
    accepted = _ACCEPTED.get(args_model)
    if accepted is None:
        fields = args_model.model_fields
        accepted = frozenset(fields) | {f.alias for f in fields.values() if f.alias}
        _ACCEPTED[args_model] = accepted
    return accepted


def parse_call(call: ToolCall, tools: ToolRegistry) -> Ready | Refused:
    """The tool and validated arguments of a call, or the error the model should see."""
    if call.cut is not None:  # cut at the output limit: never run (agent/recovery.py)
        return Refused(too_long(call))
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(tools.names()) or "none"
        return Refused(f"unknown tool {call.name!r}; available tools: {known}")
    try:
        raw = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError as exc:
        return Refused(
            f"arguments of {call.name} are not valid JSON ({exc}): {call.arguments[:200]!r}"
        )
    if not isinstance(raw, dict):
        return Refused(f"arguments of {call.name} must be a JSON object, got {type(raw).__name__}")
    unknown = [key for key in raw if key not in _accepted(tool.args_model)]
    if unknown:
        # A misspelt argument silently ignored would run the call with a default instead.
        names = ", ".join(repr(key) for key in unknown)
        fields = tool.args_model.model_fields
        expected = ", ".join(f.alias or name for name, f in fields.items()) or "none"
        return Refused(f"unknown argument {names} for {call.name}; its arguments are: {expected}")
    try:
        return Ready(tool, tool.args_model.model_validate(raw))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
            for err in exc.errors()
        )
        return Refused(f"invalid arguments for {call.name}: {problems}")
