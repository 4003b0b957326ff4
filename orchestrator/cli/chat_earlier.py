"""What a chat opened on a session that already has a history (`chat --resume ID`,
`chat --last`) shows first, above the input line: the conversation so far, read from the
journal. The person's messages as the input line showed them (`› ...`: the goal, then
each line said to the main agent, or to a task, `› (to t2) ...`), and the main agent's
replies as the transcript showed their text, in order. Compact: a message of more than
`LINES` lines shows its first ones and how many more there were; tool calls, tasks and
mail between agents are left out (`/tasks` and `sessions show` have them).
"""

from __future__ import annotations

import functools
from pathlib import Path

import msgspec

from orchestrator.layout import JOURNAL
from orchestrator.state.events import AssistantReplied
from orchestrator.state.mailbox import MAIN, USER, MessagePosted
from orchestrator.store._line import line_kind
from orchestrator.store.scan import scan_journal
from orchestrator.text import label, visible

LINES = 6
"""The lines of one message shown, at most."""
HEADER = "── earlier in this session ──"
FOOTER = "── now ──"

_WANTED = frozenset({b"assistant_replied", b"message_posted"})


def earlier(directory: Path, goal: str) -> list[str]:
    """The conversation of the session in `directory` (whose goal is `goal`) so far, as
    lines to print; none when the main agent has not replied yet (nothing to recall)."""
    said = [*_said(goal)]
    replied = False
    for line in scan_journal(directory / JOURNAL).lines:
        if line_kind(line) not in _WANTED:
            continue
        match _decoder().decode(line):
            case MessagePosted(agent=sender, to=to, summary=text) if sender == USER:
                said += _said(text, to)
            case AssistantReplied(agent=agent, message=message) if agent == MAIN:
                if message.text.strip():
                    said += _shown(message.text)
                    replied = True
            case _:
                pass
    return [HEADER, *said, FOOTER] if replied else []


def _said(text: str, to: str = MAIN) -> list[str]:
    """The person's message, as the input line showed it."""
    first, *rest = _shown(text) or [""]
    whom = "" if to == MAIN else f"(to {label(to, 40)}) "
    return [f"› {whom}{first}", *(f"  {line}" for line in rest)]


def _shown(text: str) -> list[str]:
    lines = [visible(line) for line in text.strip().splitlines()]
    if len(lines) > LINES:
        more = len(lines) - LINES + 1
        lines = [*lines[: LINES - 1], f"… ({more} more lines)"]
    return lines


@functools.cache
def _decoder() -> msgspec.json.Decoder[AssistantReplied | MessagePosted]:
    return msgspec.json.Decoder(AssistantReplied | MessagePosted)
