"""What an agent reads of its mail: messages rendered as the text of one user message (or
a `wait_tasks` result), bounded by the mailbox's `Caps`."""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.state.mailbox import DEFAULT_PRIORITY, FROM_TASK, Caps, Mail


def latest_progress_only(messages: list[Mail]) -> list[Mail]:
    """Several progress reports from one task as its latest only (all are kept in the
    task's timeline; this is what one delivery shows)."""
    latest: dict[str, str] = {}
    for mail in messages:
        if mail.kind == "progress":
            latest[mail.task_id] = mail.message_id
    return [m for m in messages if m.kind != "progress" or latest[m.task_id] == m.message_id]


DEFAULT_CAPS = Caps()


def render(messages: Sequence[Mail], caps: Caps = DEFAULT_CAPS, *, heading: bool = True) -> str:
    """Messages as the text of one user message (or a tool result)."""
    parts = [_render_one(m, caps) for m in messages]
    text = "\n\n".join(parts)
    if len(text) > caps.delivery_chars:
        text = (
            text[: caps.delivery_chars]
            + f"\n[... cut at {caps.delivery_chars} characters; every message is kept in "
            "full in the session (`orchestrator sessions show`)]"
        )
    if heading:
        count = "1 message" if len(messages) == 1 else f"{len(messages)} messages"
        return f"[mailbox: {count}]\n{text}"
    return text


def _head(mail: Mail) -> str:
    who = f"task {mail.task_id}" if mail.kind in FROM_TASK else f"{mail.sender}"
    head = f"<{mail.kind} id={mail.message_id} from={who}"
    if mail.priority != DEFAULT_PRIORITY[mail.kind]:
        head += f" priority={mail.priority}"
    if mail.in_reply_to:
        head += f" in_reply_to={mail.in_reply_to}"
    if mail.requires_ack and mail.answered_by:
        head += f" answered_by={mail.answered_by}"  # (by the person, before it got here)
    elif mail.requires_ack:
        head += " needs_answer=yes"
    return head + ">"


def _render_one(mail: Mail, caps: Caps) -> str:
    head = _head(mail)
    body = [mail.summary]
    data = mail.data or {}
    match mail.kind:
        case "progress" if data.get("percent") is not None:
            body[0] = f"{data['percent']}%: {mail.summary}"
        case "completed":
            for key, label in (
                ("files_changed", "files changed"),
                ("verification", "verification run"),
                ("risks", "known risks"),
                ("follow_ups", "follow-ups"),
                ("unlisted_changes", "CHANGED BUT NOT LISTED"),
                ("unchanged_listed", "LISTED BUT NOT CHANGED"),
                ("outside_scope", "CHANGED OUTSIDE ITS WRITE SCOPE"),
            ):
                values = data.get(key) or ()
                if values:
                    body.append(f"{label}: " + "; ".join(str(v) for v in values))
        case "blocked":
            body[0] = f"({data.get('category', '?')}) {mail.summary}"
        case "decision_required":
            options = data.get("options") or ()
            if options:
                body.append("options: " + " | ".join(str(o) for o in options))
            if not mail.answered_by:
                body.append(f"answer with send_message(task={mail.task_id!r}, kind='answer', ...)")
        case _:
            pass
    text = "\n".join(body)
    if len(text) > caps.message_chars:
        text = text[: caps.message_chars] + (
            f"\n[... cut; the full message is {mail.message_id} in the session record]"
        )
    return f"{head}\n{text}\n</{mail.kind}>"
