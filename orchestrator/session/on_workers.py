"""The tasks of a session that ran on workers (the dbos engine with `--workers`;
docs/engine.md). The session's journal holds each one's start (its context's first
messages, its task record) and what it posted; the rest, its own journal of framed lines
as a session's `journal.jsonl` holds them, is in the engine's database, keyed by
`<session id>/<task id>`.

`session/` reads no database: a reader of the engine's (`engine/shown.py`, chosen by the
command line) is handed in as a `WorkersReader`, and what it gives, `WorkerRecords`, is
folded here, with the fold a worker's `TaskSession` uses, for the report and the
transcripts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from orchestrator.errors import JournalCorrupt
from orchestrator.state.events import Record, record_decoder
from orchestrator.state.settings import SessionSettings
from orchestrator.state.snapshot import AgentSummary, Snapshot, TodosSummary
from orchestrator.state.tasks import TaskRecord
from orchestrator.store._line import line_fault

if TYPE_CHECKING:
    # Imported where a task's journal is folded: `sessions show` of a session whose tasks
    # ran here never folds (session/report.py).
    from orchestrator.state.fold import SessionState

Rows = Sequence[tuple[int, bytes]]
"""A task's journal as the engine's database keeps it: (seq, framed line), in order."""


class WorkerRecords(msgspec.Struct, frozen=True):
    """What the engine's database holds of a session's tasks that ran on workers: each
    one's journal, by task id; where it was read (the URL, its password hidden); and,
    when it could not be read, why (`unread`)."""

    journals: Mapping[str, Rows] = msgspec.field(default_factory=dict)
    database: str = ""
    unread: str = ""


WorkersReader = Callable[[str, SessionSettings], WorkerRecords]
"""Reads the records of session `id`'s tasks on workers, given its settings (whose
`engine_database` is the journaled URL); never raises for a database it cannot read."""

NO_READER = "no reader of the engine's database was given"


def ran_on_workers(settings: SessionSettings | None) -> bool:
    """Whether a session with `settings` runs its delegated tasks on workers."""
    return settings is not None and settings.engine == "dbos" and settings.engine_workers


def read_workers(
    session_id: str, settings: SessionSettings | None, reader: WorkersReader | None
) -> WorkerRecords | None:
    """The records of the session's tasks on workers (None: its tasks run here)."""
    if settings is None or not ran_on_workers(settings):
        return None
    if reader is None:
        return WorkerRecords(database=settings.engine_database, unread=NO_READER)
    return reader(session_id, settings)


def folded_rows(key: str, rows: Rows, state: SessionState) -> Iterator[tuple[int, Record]]:
    """Each record of `rows` (task `key`'s journal) folded into `state`, then given with
    its seq; a line that does not check or decode is corruption, named by task and seq."""
    decode = record_decoder().decode
    for seq, line in rows:
        body = line[:-1] if line.endswith(b"\n") else line
        fault = line_fault(body)
        if fault is None and seq != state.seq + 1:
            fault = f"follows record {state.seq}"
        if fault is not None:
            raise JournalCorrupt(f"remote task {key}: record {seq} {fault}", seq=seq)
        try:
            record = decode(body)
            state.apply(seq, record)
        except Exception as exc:
            raise JournalCorrupt(f"remote task {key}: record {seq}: {exc}", seq=seq) from exc
        yield seq, record


def fold(key: str, rows: Rows, state: SessionState | None = None) -> SessionState:
    """`rows` of task `key`'s journal folded into `state` (a new one when None)."""
    from orchestrator.state.fold import SessionState

    state = state or SessionState()
    for _ in folded_rows(key, rows, state):
        pass
    return state


def with_workers(
    session_id: str,
    snapshot: Snapshot,
    read_calls: Callable[[Record], None],
    reader: WorkersReader | None,
) -> tuple[
    dict[str, Any] | None, dict[str, AgentSummary], dict[str, TodosSummary], list[TaskRecord]
]:
    """The session's agents, todos and tasks, those of its tasks on workers as their own
    journals have them (each task's own records given to `read_calls`, for their model
    calls; the tasks they delegated there, as their journals hold them, under them in the
    tree), and what the report says of where they were read, or why not (None: its
    tasks ran in its own process). A journal that would not fold is left out, and said."""
    found = read_workers(session_id, snapshot.settings, reader)
    if found is None:
        return None, snapshot.agents, snapshot.todos, snapshot.tasks
    from orchestrator.state.fold import SessionState

    agents, todos = dict(snapshot.agents), dict(snapshot.todos)
    tasks = {task.task_id: task for task in snapshot.tasks}
    read: list[str] = []
    problems: list[str] = []
    for task_id, rows in found.journals.items():
        state = SessionState()
        try:
            records = [r for _, r in folded_rows(f"{session_id}/{task_id}", rows, state)]
        except JournalCorrupt as exc:
            problems.append(str(exc))
            continue
        for record in records:
            if record.agent == task_id:  # (its owner's seed and mail are the session's)
                read_calls(record)
        there = state.snapshot()
        for child in there.tasks:  # delegated on its worker: in its journal, not the session's
            tasks.setdefault(child.task_id, child)
        if task_id in there.agents:
            agents[task_id] = there.agents[task_id]
        if task_id in there.todos:
            todos[task_id] = there.todos[task_id]
        read.append(task_id)
    order = {task.task_id: n for n, task in enumerate(snapshot.tasks)}
    info = {
        "database": found.database,
        "tasks": sorted(read, key=lambda task_id: order.get(task_id, len(order))),
        "unread": "; ".join(filter(None, [found.unread, *problems])),
    }
    return info, agents, todos, list(tasks.values())
