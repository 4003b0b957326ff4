"""Which tool calls may run: rules of allow / ask / deny per tool (for `shell`, per
command pattern too), grants made during a session, and the approver that answers "ask".

A rule is `TOOL=DECISION` or, for the shell, `shell:PATTERN=DECISION`, where PATTERN is a
glob matched against the whole command (`shell:pytest *=allow`); an MCP server's tool is
`mcp:SERVER/TOOL=DECISION`, TOOL a glob of its tools' names (`mcp:docs/*=allow`), the
rule of the tool the model sees as `SERVER__TOOL` (docs/mcp.md). A rule with a pattern
wins over one without; the last of equals wins. A tool with no rule is allowed when it
is read-only and asked about otherwise. A grant ("always, for this session", answered at
the prompt) is an allow rule that the session journals, so a resume keeps it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import orjson

from orchestrator.messages import ToolCall

Decision = Literal["allow", "ask", "deny"]
_GLOBBED = re.compile(r"[*?\[]")
MCP_SEPARATOR = "__"  # between an MCP server's name and its tool's (mcp/servers.py)
DECISIONS: tuple[Decision, ...] = ("allow", "ask", "deny")


@dataclass(frozen=True)
class Rule:
    tool: str  # a name, or a glob of names (an MCP rule's: `docs__*`)
    decision: Decision
    pattern: str = ""  # a glob over the shell command; "" matches every call of the tool

    def matches(self, call: ToolCall) -> bool:
        if call.name != self.tool and not (
            _GLOBBED.search(self.tool) and fnmatch.fnmatchcase(call.name, self.tool)
        ):
            return False
        return not self.pattern or fnmatch.fnmatchcase(shell_command(call), self.pattern)


@dataclass(frozen=True)
class Grant:
    """An answer that also allows later calls: the tool, or shell commands matching a
    pattern, for the rest of the session."""

    tool: str
    pattern: str = ""


class GrantLike(Protocol):
    """A grant as the session keeps it (a `Grant`, or its journal record)."""

    @property
    def tool(self) -> str: ...

    @property
    def pattern(self) -> str: ...


@dataclass(frozen=True)
class Unasked:
    """The answer when nobody can be asked (no terminal and no `--yes`): the call is
    refused as `unapproved`, a result status the session's outcome counts, where a
    person's no is an ordinary error the model reads. False, like a no, to any code
    that only asks whether the call may run."""

    def __bool__(self) -> bool:
        return False


@dataclass(frozen=True)
class Denied:
    """A no with its reason, which the model reads in the call's result ("shell was not
    approved: not on a Friday; do not retry it"). False, like a plain no."""

    reason: str

    def __bool__(self) -> bool:
        return False


@dataclass(frozen=True)
class Later:
    """ "Not now": the call is parked until a person decides, and the run ends `blocked`
    with its `ApprovalRequest` in `RunResult.approvals`; `resume(..., approvals={id:
    True | Denied(why)})` gives the decision, and the call then runs once (or is
    refused). Only the main agent's calls park: for a subagent's it is taken as
    `Unasked` (docs/library.md#deferred-approvals). False, like a no, to any code that
    only asks whether the call may run now."""

    def __bool__(self) -> bool:
        return False


Answer = bool | Grant | Unasked | Denied | Later
Approver = Callable[[ToolCall], Awaitable[Answer]]
"""Answers an "ask": True runs the call, False refuses it, `Denied` refuses it with a
reason the model reads, a `Grant` runs it and allows what the grant covers from then on,
`Unasked` refuses it for want of anyone to ask, `Later` parks it for a person's decision."""


def string_argument(call: ToolCall, name: str) -> str:
    """The call's string argument `name` ("" when missing, not a string, or the
    arguments are unreadable)."""
    try:
        arguments = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        return ""
    value = arguments.get(name) if isinstance(arguments, dict) else None
    return value if isinstance(value, str) else ""


def shell_command(call: ToolCall) -> str:
    """The command of a shell call ("" for anything else, or unreadable arguments)."""
    return string_argument(call, "command")


@dataclass(frozen=True)
class PermissionPolicy:
    rules: Sequence[Rule] = field(default_factory=tuple)
    default: Decision = "ask"

    def decide(
        self, call: ToolCall, *, read_only: bool, grants: Sequence[GrantLike] = ()
    ) -> Decision:
        granted = [Rule(g.tool, "allow", g.pattern) for g in grants]
        matching = [rule for rule in [*self.rules, *granted] if rule.matches(call)]
        if matching:
            # Specific (with a pattern) before general; among equals, the last one.
            return sorted(matching, key=lambda rule: bool(rule.pattern))[-1].decision
        return "allow" if read_only else self.default


async def approve_all(call: object) -> Answer:
    """`--yes`: every "ask" is answered yes (a bare call, or an `ApprovalRequest`)."""
    return True


async def deny_all(call: object) -> Answer:
    """Non-interactive runs without `--yes`: nobody answers an "ask", so the call is
    refused as `unapproved`."""
    return Unasked()


def parse_rules(items: list[str]) -> list[Rule]:
    """Parse `TOOL=allow|ask|deny`, `shell:PATTERN=allow|ask|deny` and
    `mcp:SERVER/TOOL=allow|ask|deny` strings."""
    rules: list[Rule] = []
    for item in items:
        target, sep, value = item.rpartition("=")
        tool, colon, pattern = target.partition(":")
        if not sep or not tool or value not in DECISIONS or (colon and not pattern):
            raise ValueError(
                f"permission rule {item!r} is not TOOL=allow|ask|deny, "
                "shell:PATTERN=allow|ask|deny or mcp:SERVER/TOOL=allow|ask|deny"
            )
        decision: Decision = "allow" if value == "allow" else "ask" if value == "ask" else "deny"
        if colon and tool == "mcp":
            server, slash, name = pattern.partition("/")
            if not (slash and server and name) or _GLOBBED.search(server):
                raise ValueError(
                    f"permission rule {item!r}: an MCP rule is mcp:SERVER/TOOL=DECISION "
                    "(TOOL may be a glob: mcp:docs/*=allow)"
                )
            rules.append(Rule(f"{server}{MCP_SEPARATOR}{name}", decision))
            continue
        if colon and tool != "shell":
            raise ValueError(
                f"permission rule {item!r}: only shell rules take a pattern (and MCP rules "
                "are mcp:SERVER/TOOL)"
            )
        rules.append(Rule(tool, decision, pattern))
    return rules
