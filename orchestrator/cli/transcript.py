"""`orchestrator sessions show ID --transcript [--full]`: each agent's conversation, as
its context holds it now, or its whole history from the journal. A task that ran on a
worker has its transcript in the engine's database (session/on_workers.py): read there
when it can be, else the session's part of it (its start) and one line saying why not."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.errors import JournalCorrupt
from orchestrator.session.on_workers import WorkerRecords, WorkersReader, folded_rows, read_workers
from orchestrator.store.ids import session_dir
from orchestrator.text import label, visible

if TYPE_CHECKING:
    from orchestrator.state.fold import SessionState

History = dict[str, list[Any]]
"""Each agent's messages (and checkpoint lines, `str`), by agent id."""


def transcript(
    root: Path,
    session_id: str,
    *,
    full: bool = False,
    workers: WorkersReader | None = None,
    warn: Callable[[str], None] = lambda _: None,
) -> int:
    """Every agent's live context (what its next model call would be sent), or with
    `full` its whole history from the journal: every message before each compaction
    too, and where each checkpoint made the context start again. A task that ran on a
    worker: from its journal in the engine's database, read by `workers`."""
    from orchestrator.session.migrations import bring_up_to_date
    from orchestrator.session.replay import load_state

    directory = session_dir(root, session_id)
    bring_up_to_date(directory, warn)  # (the commands that read journals read only this format)
    history: History = {}
    if full:
        state, history = _full_history(directory)
    else:
        state = load_state(directory, warn=lambda text: print(f"warning: {text}", file=sys.stderr))
    found = read_workers(session_id, state.settings, workers)
    remote: dict[str, SessionState] = {}
    remote_history: History = {}
    if found is not None:
        remote, problems, remote_history = _remote(session_id, found)
        print(_workers_line(found, list(remote), problems) + "\n")
    for agent in state.agents.values():
        there = remote.get(agent.id)
        context = there.agents[agent.id] if there is not None else agent
        print(f"── {context.id} ({context.role}) " + "─" * 40)
        if full:
            items = remote_history[agent.id] if there is not None else history.get(agent.id, [])
            for item in items:
                if isinstance(item, str):
                    print(f"{item}\n")
                else:
                    _print_message(item)
            continue
        if context.compactions:
            times = f"{context.compactions} time{'' if context.compactions == 1 else 's'}"
            print(
                f"(its live context, from its checkpoint at seq {context.start}: compacted "
                f"{times}; --full shows everything before)\n"
            )
        for message in context.messages:
            _print_message(message)
    return 0


def _workers_line(found: WorkerRecords, read: list[str], problems: list[str]) -> str:
    """Whence the transcripts of the tasks on workers came, or why they are not shown."""
    where = label(found.database, 200) if found.database else "the engine's database"
    unread = visible("; ".join(filter(None, [found.unread, *problems])))
    if not read:
        why = f"; not shown: {unread}" if unread else "; none of its tasks has any yet"
        return f"(the transcripts of its tasks on workers are in {where}{why})"
    line = f"(the transcripts of its tasks on workers are read from {where}"
    return line + (f"; not all: {unread})" if unread else ")")


def _full_history(directory: Path) -> tuple[SessionState, History]:
    """The session's state, and every message each agent's context ever held, in order,
    from the whole journal."""
    from orchestrator.layout import JOURNAL
    from orchestrator.session.replay import folded, gc_paused
    from orchestrator.state.fold import SessionState
    from orchestrator.store.scan import scan_journal

    state = SessionState()
    with gc_paused():
        history = _histories(folded(state, scan_journal(directory / JOURNAL, mark=None)), state)
    return state, history


def _remote(
    session_id: str, found: WorkerRecords
) -> tuple[dict[str, SessionState], list[str], History]:
    """Each task on a worker from its journal in the engine's database: its folded state
    and its whole history (by task id), and the problems of those whose journal would
    not fold (left out)."""
    from orchestrator.state.fold import SessionState

    states: dict[str, SessionState] = {}
    problems: list[str] = []
    history: History = {}
    for task_id, rows in found.journals.items():
        state = SessionState()
        try:
            items = _histories(folded_rows(f"{session_id}/{task_id}", rows, state), state)
        except JournalCorrupt as exc:
            problems.append(str(exc))
            continue
        if task_id in state.agents:
            states[task_id] = state
            history[task_id] = items.get(task_id, [])
    return states, problems, history


def _histories(records: Iterable[tuple[int, Any]], state: SessionState) -> History:
    """Every message each agent's context ever held, in order, from `records` (each
    folded into `state` before it is given); a line (a `str`) where a compaction made it
    start again, followed by what the checkpoint brought (its summary and anchors; the
    turns it kept verbatim are those shown just before)."""
    from orchestrator.loop.anchors import HEADER
    from orchestrator.loop.compaction import ContextCompacted
    from orchestrator.messages import UserMessage
    from orchestrator.state.events import AgentStarted
    from orchestrator.team.anchoring import SUMMARY_HEADER

    brought = (SUMMARY_HEADER, HEADER)  # what a checkpoint adds to the turns it keeps

    history: History = {}
    shown: dict[str, int] = {}  # of each context's messages, those already in `history`
    carried: dict[str, set[str]] = {}  # the summaries and anchors in each live context
    for seq, record in records:
        context = state.agents.get(record.agent)
        if context is None:
            continue
        items = history.setdefault(context.id, [])
        if isinstance(record, ContextCompacted):
            items.append(_checkpoint_line(seq, record))
            kept = carried.get(context.id, set())
            new = [
                m.content
                for m in record.messages
                if isinstance(m, UserMessage) and m.content.startswith(brought)
            ]
            brings = [UserMessage(content=text) for text in new if text not in kept]
            items.extend(brings or ["(its summary and anchors read as the last ones)"])
            carried[context.id] = set(new)
        elif isinstance(record, AgentStarted):
            items.extend(context.messages)
        else:
            items.extend(context.messages[shown.get(context.id, 0) :])
        shown[context.id] = len(context.messages)
    return history


def _checkpoint_line(seq: int, record: Any) -> str:
    """Where a compaction made an agent's context start again, in a line."""
    why = {"fraction": "near its window", "too_long": "too long for the provider"}
    return (
        f"══ checkpoint (seq {seq}): compacted {why.get(record.reason, 'by hand')}, "
        f"{record.method}, {record.before:,} → {record.after:,} tokens, {record.pruned} tool "
        "outputs pruned; the context starts again here, from its summary and anchors ══"
    )


def _print_message(message: Any) -> None:
    from orchestrator.messages import AssistantMessage, SystemMessage, ToolResult, UserMessage

    match message:
        case SystemMessage(content=text) | UserMessage(content=text):
            print(f"[{message.role}]\n{visible(text)}\n")
        case AssistantMessage(text=text, tool_calls=calls):
            print("[assistant]" + (f"\n{visible(text)}" if text else ""))
            for call in calls:
                print(f"  → {visible(call.name)} ({call.id}) {visible(call.arguments)}")
            print()
        case ToolResult(name=name, call_id=call_id, status=status, content=text):
            print(f"[{visible(name)} {status} ({call_id})]\n{visible(text)}\n")
