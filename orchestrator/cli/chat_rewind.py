"""The chat's `/rewind`: the session's last points, and going back to one of them, the
workspace's files too (`sessions rewind`, docs/time-travel.md); the chat then goes on in
the fork, and the path left stays a session of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from orchestrator.errors import SessionError
from orchestrator.session.fork import fork
from orchestrator.session.points import session_points
from orchestrator.text import label

if TYPE_CHECKING:
    from orchestrator.cli.chat import Chat

SHOWN = 15  # the last points listed
CHANGES_SHOWN = 10


async def rewind(chat: Chat, rest: str) -> bool:
    """`/rewind`: the last points; `/rewind POINT`: back to one (with nothing running).
    False once rewound: the chat leaves this session for the fork (`chat.switch_to`)."""
    live = chat.live
    await live.journal.flush()  # (the points are read from the file)
    if not rest:
        found = await trio.to_thread.run_sync(session_points, live.directory)
        lines = [f"{p.seq:>6}  {p.kind:<10}  {p.summary}" for p in found[-SHOWN:]]
        lines.append("/rewind POINT goes back to one: the conversation, tasks and files")
        chat.say("\n".join(lines))
        return True
    if chat.running:
        chat.say("a turn is running: stop it first (Ctrl+C), then /rewind POINT")
        return True
    if not rest.isdigit():
        chat.say(f"/rewind takes a point's number (/rewind lists them), not {label(rest, 40)}")
        return True
    root, at = live.directory.parent, int(rest)
    try:
        made = await trio.to_thread.run_sync(fork, root, live.id, at, "here")
    except SessionError as exc:
        chat.say(f"cannot rewind: {exc}")
        return True
    lines = [f"rewound to point {at}: session {made.session_id} goes on from there"]
    words = {"A": "restored", "M": "overwritten", "D": "removed"}
    lines += [f"  {words.get(w, w):<11} {label(p, 200)}" for w, p in made.changes[:CHANGES_SHOWN]]
    if len(made.changes) > CHANGES_SHOWN:
        lines.append(f"  ... and {len(made.changes) - CHANGES_SHOWN} more")
    lines.append(f"the path left stays session {live.id}")
    chat.say("\n".join(lines))
    chat.switch_to = made.session_id
    return False
