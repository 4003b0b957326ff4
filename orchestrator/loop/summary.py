"""The summary a compaction asks a model for: the request, the sections it must hold
(checked after generation), and the deterministic summary built from facts alone when the
model's fails twice. Pure: the runtime sends the request and hands the reply back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from orchestrator.loop.pruning import cut_points, prune
from orchestrator.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResult,
    UserMessage,
)

SUMMARY_HEADER = "[Summary of the conversation before this point, written at a compaction]"
"""What the summary's message in a checkpoint starts with."""

SECTIONS: tuple[str, ...] = (
    "Goal and constraints",
    "User messages",
    "Decisions",
    "Files touched",
    "Errors and fixes",
    "Current work",
    "Next step",
)
"""The headings a summary must have, each with something under it (`## Goal and
constraints` ...): the user's messages and corrections verbatim, decisions and why, the
files touched and what changed, the errors and how they were resolved."""

_HEADING = re.compile(r"^#{1,6}\s*(.+?)\s*#*\s*$", re.MULTILINE)


def sections(summary: str) -> dict[str, str]:
    """The summary's text under each of its headings, by heading (case and trailing
    colons ignored)."""
    found: dict[str, str] = {}
    marks = list(_HEADING.finditer(summary))
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(summary)
        title = mark.group(1).rstrip(":").strip().lower()
        found[title] = summary[mark.end() : end].strip()
    return found


def missing_sections(summary: str) -> list[str]:
    """The required sections a summary lacks, or has empty: a summary with any is a
    failed attempt (one repair retry, then the fallback)."""
    found = sections(summary)
    return [name for name in SECTIONS if not found.get(name.lower())]


class Facts(msgspec.Struct, frozen=True, kw_only=True):
    """What the runtime knows without a model, for the fallback summary."""

    goal: str
    user_messages: Sequence[str] = ()
    files_touched: Sequence[str] = ()
    errors: Sequence[str] = ()
    current_work: str = ""
    next_step: str = ""


def fallback_summary(facts: Facts) -> str:
    """A summary with every required section, built from `facts` alone (deterministic:
    the same facts give the same text)."""

    def listed(items: Sequence[str], none: str) -> str:
        return "\n".join(f"- {item}" for item in items) if items else none

    bodies = (
        facts.goal or "(no goal recorded)",
        listed(facts.user_messages, "(none besides the goal)"),
        "(not known without a model summary: see the journal)",
        listed(facts.files_touched, "(none)"),
        listed(facts.errors, "(none recorded)"),
        facts.current_work or "(see the todo list and tasks below)",
        facts.next_step or "(see the todo list: the first open item)",
    )
    parts = [f"## {name}\n{body}" for name, body in zip(SECTIONS, bodies, strict=True)]
    return "[compacted without a model summary]\n\n" + "\n\n".join(parts)


INSTRUCTIONS = (
    "You write the handoff summary of an agent's conversation: the agent goes on from "
    "your summary alone, with its todo list, tasks and files restored beside it from the "
    "session's records. Write these sections, each a markdown heading (## Name) with "
    "content under it, in this order: {sections}. Under 'User messages', quote every "
    "message and correction of the user (or of the agent's owner) verbatim. Under "
    "'Decisions', say what was decided and why. Under 'Files touched', each file and what "
    "changed in it. Under 'Errors and fixes', each error and how it was resolved. Under "
    "'Next step', the one concrete thing to do next. Be specific: names, paths, figures. "
    "Write nothing but the summary."
)
RESULT_CHARS = 2_000
"""How much of one tool output the summariser reads (the rest is `recall`able)."""


def summary_request(messages: Sequence[Message]) -> list[Message]:
    """The messages of a summary request for `messages` (the part of a context to be
    summarised): the instructions, and the conversation as a transcript to summarise."""
    sections = ", ".join(SECTIONS)
    return [
        SystemMessage(content=INSTRUCTIONS.format(sections=sections)),
        UserMessage(
            content="The conversation to summarise:\n\n"
            + transcript(messages)
            + "\n\nNow write the summary, with the sections: "
            + sections
        ),
    ]


def repair_request(
    request: Sequence[Message], summary: str, missing: Sequence[str]
) -> list[Message]:
    """The summary request again, with the attempt that lacked `missing` sections and
    what to mend."""
    return [
        *request,
        AssistantMessage(text=summary),
        UserMessage(
            content="Your summary lacks these sections, or has nothing under them: "
            + ", ".join(missing)
            + ". Write the whole summary again, with every section: "
            + ", ".join(SECTIONS)
        ),
    ]


def shrink(head: Sequence[Message]) -> list[Message] | None:
    """`head` made smaller for a summariser that found it too long: every tool output
    pruned, else its older half dropped; None when nothing is left to drop."""
    pruned = prune(head, keep_chars=0)
    if pruned.refs:
        return pruned.messages
    points = [p for p in cut_points(head) if p > 0]
    if not points:
        return None
    return list(head[points[len(points) // 2] :])


def transcript(messages: Sequence[Message]) -> str:
    """The messages as plain text a summariser reads (no tool-call structures, which some
    providers refuse without tool definitions); long outputs are cut."""
    lines = []
    for message in messages:
        match message:
            case SystemMessage():
                lines.append(f"[system]\n{message.content}")
            case UserMessage():
                lines.append(f"[user]\n{message.content}")
            case AssistantMessage():
                text = message.text
                for call in message.tool_calls:
                    text += f"\n-> {call.name}({call.arguments})"
                lines.append(f"[assistant]\n{text.strip()}")
            case ToolResult():
                content = message.content
                if len(content) > RESULT_CHARS:
                    cut = len(content) - RESULT_CHARS
                    content = content[:RESULT_CHARS] + f"\n... ({cut} more characters)"
                ref = f" {message.ref}" if message.ref else ""
                lines.append(f"[result of {message.name}{ref}: {message.status}]\n{content}")
    return "\n\n".join(lines)
