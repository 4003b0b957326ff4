"""The permission question at the terminal: exactly what will run, then y / n / always.

It is written to stderr, never stdout (`run --json > out.jsonl` stays pure JSON), shows
the call whole (the full shell command, the full path, the content of a write or the diff
of an edit; long content is cut with its size and a way to see all of it), and Ctrl+C
while it waits stops the run at once.
"""

from __future__ import annotations

import difflib
import fnmatch
import sys
from typing import Any, TextIO

import orjson
import trio

from orchestrator.cli.text import visible
from orchestrator.messages import ToolCall
from orchestrator.tools.permissions import Answer, Grant, shell_command

SHOWN_LINES = 40


def describe_call(call: ToolCall, *, whole: bool = False) -> str:
    """What the call will do, for a person deciding whether it may."""
    try:
        args: Any = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        args = None
    if not isinstance(args, dict):
        return f"{call.name} with arguments {call.arguments}"
    match call.name:
        case "shell" if isinstance(args.get("command"), str):
            timeout = f" (timeout {args['timeout']} s)" if "timeout" in args else ""
            return f"shell wants to run{timeout}:\n{_indent(args['command'], whole=True)}"
        case "write_file" if isinstance(args.get("content"), str):
            content = args["content"]
            size = f"{len(content.encode())} bytes, {len(content.splitlines())} lines"
            return f"write_file wants to write {args.get('path')!s} ({size}):\n" + _indent(
                content, whole=whole
            )
        case "edit_file" if isinstance(args.get("old_text"), str):
            diff = difflib.unified_diff(
                args["old_text"].splitlines(keepends=True),
                str(args.get("new_text", "")).splitlines(keepends=True),
                fromfile=f"{args.get('path')} (before)",
                tofile=f"{args.get('path')} (after)",
            )
            return f"edit_file wants to change {args.get('path')!s}:\n" + _indent(
                "".join(diff), whole=whole
            )
        case _:
            shown = orjson.dumps(args, option=orjson.OPT_INDENT_2).decode()
            return f"{call.name} wants to run with:\n" + _indent(shown, whole=whole)


def _indent(text: str, *, whole: bool) -> str:
    lines = text.splitlines() or [""]
    cut = not whole and len(lines) > SHOWN_LINES
    shown = lines[:SHOWN_LINES] if cut else lines
    out = "\n".join(f"  │ {line}" for line in shown)
    if cut:
        rest = "\n".join(lines[SHOWN_LINES:])
        out += (
            f"\n  … {len(lines) - SHOWN_LINES} more lines ({len(rest.encode())} bytes); "
            "answer v to see all"
        )
    return out


def make_prompt(out: TextIO = sys.stderr, read: Any = None) -> Any:
    """An approver that asks at the terminal."""
    readline = read or sys.stdin.readline

    async def ask(call: ToolCall) -> Answer:
        whole = False
        choices = f"[y]es, [n]o, [a]lways {visible(call.name)} in this session, [v]iew all"
        if call.name == "shell":
            choices += ", or p PATTERN: always commands matching PATTERN (p pytest *)"
        while True:
            out.write("\n" + visible(describe_call(call, whole=whole)) + "\n")
            out.write(f"Allow? {choices}: ")
            out.flush()
            # Abandoned on cancel: Ctrl+C stops the run without waiting for a line.
            line = (await trio.to_thread.run_sync(readline, abandon_on_cancel=True)).strip()
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
                out.write(f"{visible(pattern)!r} does not match this command; ask again.\n")
                continue
            return False

    return ask
