"""The permission question at the terminal: exactly what will run, then y / n / always.

It is written to stderr, never stdout (`run --json > out.jsonl` stays pure JSON), shows
the call whole (the full shell command, the full path, the content of a write or the diff
of an edit; long content is cut with its size and a way to see all of it), and Ctrl+C
while it waits stops the run at once.

Nothing a model wrote can imitate the question's own lines: the names in it (the agent
asking, its task's description, the tool, the path) are labels, one line each, escaped
and cut (`text.label`); the command or content under approval is set apart behind a
gutter (`text.block`); so every line that starts at the left edge is ours.
"""

from __future__ import annotations

import difflib
import fnmatch
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from typing import Any, TextIO

import orjson
import trio

from orchestrator.cli.style import format_arguments
from orchestrator.loop.assessment import RefusedCall
from orchestrator.messages import ToolCall
from orchestrator.text import block, label
from orchestrator.tools.base import ToolRegistry
from orchestrator.tools.permissions import (
    Answer,
    Approver,
    Grant,
    GrantLike,
    PermissionPolicy,
    approve_all,
    deny_all,
    shell_command,
)

SHOWN_LINES = 40

# `hold(agent, what)`: the screen is left to the question while the block runs (the live
# view pauses, and shows `agent` needing input about `what`).
Hold = Callable[[str, str], AbstractContextManager[None]]


@contextmanager
def no_hold(agent: str = "", what: str = "") -> Iterator[None]:
    yield


class Asking:
    """The terminal's questions (a call's approval, an MCP server's question or changed
    tool, a plan, a task's revival), one at a time: `async with asking(agent, what)`
    waits until the question before is answered, then leaves the screen to this one
    (`hold`). Agents run at once; without it two questions would be on the screen
    together, and the person's line would answer whichever read it first."""

    def __init__(self, hold: Hold = no_hold) -> None:
        self._hold = hold
        self._one = trio.Lock()

    @asynccontextmanager
    async def __call__(self, agent: str, what: str) -> AsyncIterator[None]:
        async with self._one:
            with self._hold(agent, what):
                yield


def describe_call(call: ToolCall, *, whole: bool = False, sandbox: str = "") -> str:
    """What the call will do, for a person deciding whether it may: one line of ours
    (its labels escaped and cut, and for a shell command whether it runs sandboxed), then
    what will run, behind the gutter."""
    try:
        args: Any = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        args = None
    name = label(call.name)
    if not isinstance(args, dict):
        return f"{name} wants to run with arguments:\n" + _shown(call.arguments, whole=whole)
    path = label(args.get("path"))
    match call.name:
        case "shell" if isinstance(args.get("command"), str):
            notes = [f"timeout {label(args['timeout'])} s"] if "timeout" in args else []
            notes += [sandbox] if sandbox else []
            if args.get("network") is True:
                notes.append("it asks for the network for this command")
            said = f" ({'; '.join(notes)})" if notes else ""
            return f"shell wants to run{said}:\n" + _shown(args["command"], whole=True)
        case "write_file" if isinstance(args.get("content"), str):
            content = args["content"]
            size = f"{len(content.encode())} bytes, {len(content.splitlines())} lines"
            return f"write_file wants to write {path} ({size}):\n" + _shown(content, whole=whole)
        case "edit_file" if isinstance(args.get("old_text"), str):
            diff = difflib.unified_diff(
                args["old_text"].splitlines(keepends=True),
                str(args.get("new_text", "")).splitlines(keepends=True),
                fromfile=f"{args.get('path')} (before)",
                tofile=f"{args.get('path')} (after)",
            )
            return f"edit_file wants to change {path}:\n" + _shown("".join(diff), whole=whole)
        case _:
            shown = orjson.dumps(args, option=orjson.OPT_INDENT_2).decode()
            return f"{name} wants to run with:\n" + _shown(shown, whole=whole)


def _shown(text: str, *, whole: bool) -> str:
    lines = block(text.removesuffix("\n"))
    cut = not whole and len(lines) > SHOWN_LINES
    out = "\n".join(lines[:SHOWN_LINES] if cut else lines)
    if cut:
        rest = "\n".join(text.removesuffix("\n").split("\n")[SHOWN_LINES:])
        out += (
            f"\n  … {len(lines) - SHOWN_LINES} more lines ({len(rest.encode())} bytes); "
            "answer v to see all"
        )
    return out


class TerminalPrompt:
    """An approver that asks at the terminal; `asking` gives one that first says which
    agent asks (a subagent's task, named by a label)."""

    def __init__(
        self,
        out: TextIO | None = None,
        read: Callable[[], str] | None = None,
        sandbox: str = "",
        asking: Asking | None = None,
    ) -> None:
        self._out = out or sys.stderr
        self._read = read or sys.stdin.readline
        self._sandbox = sandbox  # how shell commands run: "sandboxed: workspace, no network"
        self._one_at_a_time = asking or Asking()

    async def __call__(self, call: ToolCall) -> Answer:
        return await self.ask(call)

    def asking(self, agent: str, who: str) -> Approver:
        async def ask(call: ToolCall) -> Answer:
            return await self.ask(call, who="" if agent == "main" else who, agent=agent)

        return ask

    async def ask(self, call: ToolCall, *, who: str = "", agent: str = "main") -> Answer:
        what = label(shell_command(call), 80) if call.name == "shell" else label(call.name)
        async with self._one_at_a_time(agent, what):
            return await self._asked(call, who)

    async def _asked(self, call: ToolCall, who: str) -> Answer:
        out, whole = self._out, False
        choices = f"[y]es, [n]o, [a]lways {label(call.name)} in this session, [v]iew all"
        if call.name == "shell":
            choices += ", or p PATTERN: always commands matching PATTERN (p pytest *)"
        while True:
            header = f"── {label(who, 100)} asks ──\n" if who else ""
            shown = describe_call(call, whole=whole, sandbox=self._sandbox)
            out.write("\n" + header + shown + "\n")
            out.write(f"Allow? {choices}: ")
            out.flush()
            # Abandoned on cancel: Ctrl+C stops the run without waiting for a line.
            line = (await trio.to_thread.run_sync(self._read, abandon_on_cancel=True)).strip()
            answer = line.lower()
            if answer in ("y", "yes"):
                return True
            if answer in ("a", "always"):
                return Grant(call.name)
            if answer in ("v", "view"):
                whole = True
                continue
            if call.name == "shell" and answer.startswith("p ") and line[2:].strip():
                pattern = line[2:].strip()
                if fnmatch.fnmatchcase(shell_command(call), pattern):
                    return Grant("shell", pattern)
                out.write(f"{label(pattern)!r} does not match this command; ask again.\n")
                continue
            return False


def make_prompt(
    out: TextIO | None = None,
    read: Callable[[], str] | None = None,
    sandbox: str = "",
    asking: Asking | None = None,
) -> TerminalPrompt:
    """An approver that asks at the terminal (`sandbox`: how shell commands run;
    `asking`: the terminal's questions, one at a time)."""
    return TerminalPrompt(out, read, sandbox, asking)


# --- without a terminal -------------------------------------------------------------------


def approvers(
    yes: bool,
    sandbox: str = "",
    asking: Asking | None = None,
    read: Callable[[], str] | None = None,
) -> tuple[Approver, Callable[[str, str], Approver] | None]:
    """Who answers a call the policy asks about (`--yes`: yes; a terminal: the person,
    whose answer `read` gives (standard input's next line when None); else nobody, and
    the call is refused as `unapproved`), and the approver per agent that names the
    agent asking (only a person at the terminal needs to be told)."""
    if yes:
        return approve_all, None
    if not sys.stdin.isatty():
        return deny_all, None
    prompt = make_prompt(read=read, sandbox=sandbox, asking=asking)
    return prompt, prompt.asking


def refusal_notice(
    tools: ToolRegistry, policy: PermissionPolicy, grants: Sequence[GrantLike] = ()
) -> str:
    """For a run with nobody to ask: one line saying which tools will be refused, and
    how to allow them ("" when no tool would be asked about)."""
    asked = []
    for tool in tools.tools():
        probe = ToolCall(id="", name=tool.name, arguments="{}")
        unasked = tool.read_only or not tool.approval
        if policy.decide(probe, read_only=unasked, grants=grants) != "ask":
            continue
        allowed = [r.pattern for r in policy.rules if r.decision == "allow" and r.tool == tool.name]
        allowed += [g.pattern for g in grants if g.tool == tool.name]
        patterns = ", ".join(repr(p) for p in allowed if p)
        asked.append(tool.name + (f" (but commands matching {patterns})" if patterns else ""))
    if not asked:
        return ""
    return (
        f"no terminal and no --yes: calls of {', '.join(asked)} need approval and will be "
        "refused (a run with a refused call ends blocked unless its --verify commands "
        "pass); allow them with --yes, --allow TOOL=allow or --allow 'shell:PATTERN=allow'"
    )


def refused_lines(refused: Sequence[RefusedCall]) -> list[str]:
    """The run's summary of the calls refused for want of approval: one line each,
    agent, tool and its arguments, all labels."""
    if not refused:
        return []
    lines = [f"refused for want of approval ({len(refused)}):"]
    for call in refused:
        arguments = label(format_arguments(call.arguments), 100)
        lines.append(f"  {label(call.agent, 40)} {label(call.tool, 40)}: {arguments}")
    return lines
