"""What MCP servers bring up during a call, asked at the terminal (docs/mcp.md).

A server's question to the person ("What a server may ask"): which server asks, during
whose call, its message set apart behind the gutter (a server's text cannot pass for our
lines), the fields its answer takes, then one line: a one-field form's value, or a JSON
object; an empty line declines. A tool changed since the session took it ("Pinned
definitions"): what changed, then y or n. Without a terminal nobody is asked: the call's
result says so (the session stops blocked on a question; a changed tool is refused)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

import trio

from orchestrator.cli.prompt import Asking
from orchestrator.mcp.elicit import ElicitAsker, Elicitation, Reply, content_of
from orchestrator.mcp.pins import Changed, Confirm
from orchestrator.text import block, label
from orchestrator.tools.permissions import Denied


def terminal_asks(
    asking: Asking | None = None, read: Callable[[], str] | None = None
) -> tuple[ElicitAsker | None, Confirm | None]:
    """Who asks the person at the terminal a server's question, and whether to take a
    changed tool: one question at a time with the terminal's others (`asking`; agents'
    calls run at once); none without a terminal."""
    one = asking or Asking()
    return terminal_asker(one, read), terminal_confirm(one, read)


def terminal_asker(
    asking: Asking | None = None,
    read: Callable[[], str] | None = None,
    out: TextIO | None = None,
) -> ElicitAsker | None:
    """Asks at the terminal (the answer is `read`'s, standard input's next line when
    None); None without a terminal."""
    if not sys.stdin.isatty():
        return None
    reader = read or sys.stdin.readline
    one = asking or Asking()

    async def ask(asked: Elicitation) -> Reply:
        where = out or sys.stderr
        who = "the main agent" if asked.agent == "main" else f"task {asked.agent}"
        async with one(asked.agent, f"MCP server {asked.server}"):
            while True:
                where.write(
                    f"\n── MCP server {label(asked.server)} asks (during {label(who)}'s call "
                    f"of {label(asked.tool)}) ──\n"
                    + "\n".join(block(asked.message))
                    + "\n"
                    + _form(asked)
                )
                where.flush()
                line: str = await trio.to_thread.run_sync(reader, abandon_on_cancel=True)
                if not line.strip():
                    return Denied("declined at the terminal")
                try:
                    content_of(asked, line)
                except ValueError as exc:
                    where.write(f"{label(str(exc), 200)}; answer again.\n")
                    continue
                return line.strip()

    return ask


def _form(asked: Elicitation) -> str:
    fields = asked.fields
    shown = ", ".join(
        f"{label(name)} ({label(spec.get('type', 'text') if isinstance(spec, dict) else 'text')})"
        for name, spec in fields.items()
    )
    if len(fields) == 1:
        return f"Answer with {shown}; an empty line declines: "
    return f"Answer with a JSON object of {shown or 'its fields'}; an empty line declines: "


def terminal_confirm(
    asking: Asking | None = None,
    read: Callable[[], str] | None = None,
    out: TextIO | None = None,
) -> Confirm | None:
    """Asks at the terminal whether to take a changed tool's new definition for the
    session (`--yes` does not: it allows calls, not a server's new words); None without
    a terminal (the call is refused, saying how to approve it)."""
    if not sys.stdin.isatty():
        return None
    reader = read or sys.stdin.readline
    one = asking or Asking()

    async def confirm(changed: Changed) -> bool:
        where = out or sys.stderr
        async with one(changed.agent, f"MCP server {changed.server}"):
            where.write(
                f"\n── MCP server {label(changed.server)} changed its tool "
                f"{label(changed.tool)} since this session took it ──\n"
                + "\n".join(block(changed.what))
                + "\nTake the new definition for this session? [y]es, [n]o: "
            )
            where.flush()
            line: str = await trio.to_thread.run_sync(reader, abandon_on_cancel=True)
        return line.strip().lower() in ("y", "yes")

    return confirm
