"""Which tool calls may run: a policy of allow / ask / deny per tool, and the approver
that answers "ask"."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from orchestrator.messages import ToolCall

Decision = Literal["allow", "ask", "deny"]

Approver = Callable[[ToolCall], Awaitable[bool]]
"""Answers an "ask": True runs the call, False refuses it."""


@dataclass(frozen=True)
class PermissionPolicy:
    """`rules` maps tool names to a decision; a tool without a rule is allowed when it is
    read-only and gets `default` otherwise."""

    rules: Mapping[str, Decision] = field(default_factory=dict)
    default: Decision = "ask"

    def decide(self, tool_name: str, *, read_only: bool) -> Decision:
        if tool_name in self.rules:
            return self.rules[tool_name]
        return "allow" if read_only else self.default


async def approve_all(call: ToolCall) -> bool:
    """`--yes`: every "ask" is answered yes."""
    return True


async def deny_all(call: ToolCall) -> bool:
    """Non-interactive runs without `--yes`: every "ask" is answered no."""
    return False


def parse_rules(items: list[str]) -> dict[str, Decision]:
    """Parse `TOOL=allow|ask|deny` strings from the command line."""
    rules: dict[str, Decision] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or value not in ("allow", "ask", "deny"):
            raise ValueError(f"permission rule {item!r} is not TOOL=allow|ask|deny")
        decision: Any = value
        rules[name] = decision
    return rules
