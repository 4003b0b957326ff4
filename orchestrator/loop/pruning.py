"""The cheap part of compaction: old tool outputs replaced by a one-line stub that names
the call's ref (the model reads it back with `recall`), and where a context may be cut so
that no tool call is separated from its result. Pure over the messages it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from orchestrator.messages import AssistantMessage, Message, SystemMessage, ToolResult

KEEP_ROUNDS = 2
"""The last rounds (a reply and its results) whose outputs are never pruned."""
STUB_PREFIX = "[output pruned from the context:"


def stub(result: ToolResult) -> str:
    """What a pruned output becomes: one line naming the call and how to read it back."""
    return (
        f'{STUB_PREFIX} {result.name}, {len(result.content)} characters; recall("{result.ref}") '
        "reads it back]"
    )


def is_stub(result: ToolResult) -> bool:
    return result.content.startswith(STUB_PREFIX)


class Pruned(NamedTuple):
    messages: list[Message]
    refs: tuple[str, ...]  # the calls whose output became a stub, oldest first
    freed: int  # characters


def prune(messages: Sequence[Message], *, keep_chars: int) -> Pruned:
    """`messages` with old tool outputs replaced by stubs: the last `KEEP_ROUNDS` rounds
    stay whole, and so do the newest outputs before them up to `keep_chars` of content;
    every older output longer than its stub (and with a ref to recall it by) is pruned."""
    out = list(messages)
    keep_from = rounds_start(out, KEEP_ROUNDS)
    budget = keep_chars
    refs: list[str] = []
    freed = 0
    for index in range(keep_from - 1, -1, -1):
        message = out[index]
        if not isinstance(message, ToolResult) or is_stub(message):
            continue
        if budget >= len(message.content):
            budget -= len(message.content)
            continue
        budget = 0  # the newest are kept: everything older than this one goes
        text = stub(message)
        if not message.ref or len(text) >= len(message.content):
            continue
        out[index] = ToolResult(
            call_id=message.call_id,
            name=message.name,
            status=message.status,
            content=text,
            changed=message.changed,
            ref=message.ref,
        )
        refs.append(message.ref)
        freed += len(message.content) - len(text)
    refs.reverse()
    return Pruned(out, tuple(refs), freed)


def rounds_start(messages: Sequence[Message], rounds: int) -> int:
    """The index of the `rounds`th reply from the end (0 when there are fewer)."""
    seen = 0
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AssistantMessage):
            seen += 1
            if seen == rounds:
                return index
    return 0


def cut_points(messages: Sequence[Message]) -> list[int]:
    """Where the messages may be cut (the index of the first message kept): before any
    message but a tool result, so a call and its result stay together; never before the
    system prompt's end."""
    first = 1 if messages and isinstance(messages[0], SystemMessage) else 0
    return [i for i in range(first, len(messages)) if not isinstance(messages[i], ToolResult)]


def recent_start(messages: Sequence[Message], keep_chars: int) -> int:
    """Where the last turns kept verbatim start: the earliest cut point whose tail fits in
    `keep_chars` (`len(messages)`: none fits, nothing is kept)."""
    start = len(messages)
    tail = 0
    points = cut_points(messages)
    position = len(messages)
    for point in reversed(points):
        tail += sum(m.chars() for m in messages[point:position])
        position = point
        if tail > keep_chars:
            break
        start = point
    return start
