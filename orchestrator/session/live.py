"""A session on disk: its manifest, its lock, its journal and its snapshot.

`create_session` (session/creation.py) makes the directory; `open_session` takes the
lock, rebuilds the state from the newest snapshot plus the journal after it, and yields a
`LiveSession` whose `sink` journals every persistent event and applies it to `state`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import orjson
import trio

from orchestrator.errors import SessionError, SessionNotFound, StorageFailed
from orchestrator.layout import MANIFEST, PLAN_JSON, PLAN_MD, TASKS_DIR, TODOS_DIR
from orchestrator.loop.compaction import ContextCompacted
from orchestrator.loop.plan import Plan, plan_json
from orchestrator.loop.plan_markdown import render
from orchestrator.loop.todos import TodosChanged
from orchestrator.session.creation import create_session as create_session
from orchestrator.session.memory import MemorySession as MemorySession
from orchestrator.session.migrations import migrate as migrate
from orchestrator.session.recall import LIMIT, recall_text
from orchestrator.session.replay import JOURNAL as JOURNAL
from orchestrator.session.replay import SNAPSHOT as SNAPSHOT
from orchestrator.session.replay import load, lost_records_advice
from orchestrator.session.replay import load_state as load_state
from orchestrator.session.status import JournalStatus, mirror
from orchestrator.state.events import AgentStarted, Event, Record, TurnEnded
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import MessagePosted
from orchestrator.state.manifest import (
    LOCK,
    Manifest,
    SessionStatus,
    now_stamp,
    read_manifest,
    write_manifest,
)
from orchestrator.state.plans import PlanSubmitted
from orchestrator.state.tasks import TaskChanged, TaskCreated
from orchestrator.store import (
    Durability,
    Journal,
    JournalMark,
    SessionLock,
    open_journal,
    session_dir,
    write_atomic,
)
from orchestrator.store.disk import is_disk_error

SNAPSHOT_EVERY = 2000
# A turn's end also writes one, once this many records came since the last: with many
# agents, turns end all the time. A compaction's checkpoint always does.
SNAPSHOT_AFTER_TURN = 200
# Either gap is at least the number of agents and tasks, so that the snapshot's cost (it
# holds a summary of each) stays a constant share of each record's however many there are.
VIEWS_EVERY = 1.0
"""Seconds at least between two writes of the views (`tasks/<id>.json`,
`todos/<agent>.json`) while a session runs, and at least `VIEWS_SHARE` times as long as
the last write took: each write covers every view changed since the last, and closing
writes the rest. Replacing a file by rename costs the file system more than its bytes
(ext4 starts writing the new file out at once): written at every turn's end, the views
of 1,000 subagents took 40% of their run."""
VIEWS_SHARE = 10
# The records `emit` looks for, as tuples: a union written in the isinstance is built
# anew for every record.
_MOVES_START = (AgentStarted, ContextCompacted)  # where its agent's context starts
_CHANGES_TASK = (TaskCreated, TaskChanged, MessagePosted)  # a task's view to write again
_NOTABLE = (*_MOVES_START, *_CHANGES_TASK, TodosChanged, PlanSubmitted, TurnEnded)


# By a record's type, whether it is of none of those (most of a round's are not: a reply,
# a call's start and its result): `emit` asks once per type.
_PLAIN: dict[type, bool] = {}


def _write_views(directory: Path, views: dict[str, bytes]) -> None:
    # Replaced atomically but not synced: a view is for people, resume never reads it, and
    # a killed process leaves the old file or the new one.
    directory.mkdir(mode=0o700, exist_ok=True)
    for name, data in views.items():
        write_atomic(directory / f"{name}.json", data, sync=False)


@dataclass
class LiveSession:
    """An open session: the one process allowed to write it."""

    id: str
    directory: Path
    manifest: Manifest
    state: SessionState
    journal: Journal
    warn: Callable[[str], None] = print
    # Kept, per event, until `seq_of` asks for it: turned on by a sink that shows seqs.
    track_seqs: bool = False
    _since_snapshot: int = field(default=0)
    _seqs: dict[int, int] = field(default_factory=dict)
    _dirty_tasks: set[str] = field(default_factory=set)  # task views to write again
    _dirty_todos: set[str] = field(default_factory=set)  # agents whose todo views to write
    _views: trio.Lock = field(default_factory=trio.Lock)  # one writer of views at a time
    _views_due_at: float = field(default=float("-inf"))  # trio time: views may be written
    _snapshots: trio.Lock = field(default_factory=trio.Lock)  # one snapshot at a time
    # Set when a snapshot or the views are due; the keeper (`keep`) writes them, so the
    # agent whose record made them due does not wait for the disk.
    _due: trio.Event = field(default_factory=trio.Event)
    _snapshot_due: bool = field(default=False)
    # A write of the snapshot, the views or the manifest that the disk refused (full,
    # read-only, failing): the session stops at its next record, as when the journal fails.
    _refused: StorageFailed | None = field(default=None)

    @property
    def workspace(self) -> Path:
        """Where the agents' tools work (inside the session's directory when relative)."""
        return self.manifest.workspace_path(self.directory)

    def seq_of(self, event: Event) -> int | None:
        """The seq of the record `event` became, asked once by a sink after this one
        (`--json` prints it); needs `track_seqs`."""
        return self._seqs.pop(id(event), None)

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        """The journal sink: persist the event's record, then fold it into state."""
        if self._refused is not None:
            raise self._refused
        record = event.record()
        if record is None:
            if durable:
                # No record of its own (an idempotent call that writes), but what it
                # follows, its reply, must be on disk before it changes anything.
                await self.journal.flush()
            return
        await self.journal.room()
        before = self.journal.mark
        # Numbered and folded without yielding in between, so the live state folds the
        # records in journal order even when many agents emit at once (as resume will).
        (seq,) = self.journal.enqueue(((record.kind, record.agent, record.journal_body()),))
        self.state.apply(seq, record)
        if self.track_seqs:
            self._seqs[id(event)] = seq
        plain = _PLAIN.get(type(record))
        if plain is None:
            plain = _PLAIN[type(record)] = not isinstance(record, _NOTABLE)
        if plain:
            await self.journal.settle(seq, durable=durable)
        else:
            await self._notable(record, seq, before, durable)
        self._since_snapshot += 1
        if not plain or self._since_snapshot >= SNAPSHOT_EVERY:
            self._snapshot_after(record)

    async def _notable(self, record: Record, seq: int, before: JournalMark, durable: bool) -> None:
        """`emit` of a record that moves its context's start, changes a view or the plan
        (settled here, between what must come before and after)."""
        if isinstance(record, _MOVES_START):
            # Where its context starts in the file: a resume reads from there on.
            self.state.agents[record.agent].start_mark = before
        # (A message about a task changes its record too: its progress, its completion.)
        if isinstance(record, _CHANGES_TASK) and record.task:
            self._dirty_tasks.add(record.task)
        if isinstance(record, TodosChanged):
            self._dirty_todos.add(record.agent)
        await self.journal.settle(seq, durable=durable)
        if isinstance(record, PlanSubmitted):
            await self._write_plan(record.plan)

    def _snapshot_after(self, record: Record) -> None:
        """Whether a snapshot (or the views) is due after `record`."""
        since, scale = self._since_snapshot, len(self.state.agents) + len(self.state.tasks.tasks)
        turn_ended = isinstance(record, TurnEnded)
        if (
            since >= max(SNAPSHOT_EVERY, scale)
            or (turn_ended and since >= max(SNAPSHOT_AFTER_TURN, scale))
            # A checkpoint moves its agent's context start: from a snapshot after it, a
            # resume reads only what follows (compactions are rare; the snapshot is small).
            or isinstance(record, ContextCompacted)
        ):
            self._since_snapshot = 0
            self._snapshot_due = True
            self._due.set()
        elif turn_ended and (self._dirty_tasks or self._dirty_todos):
            self._due.set()

    async def recall(self, agent: str, ref: str, offset: int = 0, limit: int = LIMIT) -> str:
        """What `ref` names in `agent`'s history, as `recall_text` renders it (the
        `recall` tool's lookup; it raises `RecallRefused`). The journal's queue is flushed
        first, so that the file holds every record folded so far: a record folded a
        moment ago may not have been written yet."""
        await self.journal.flush()
        read = functools.partial(
            recall_text, self.directory, agent, ref, offset=offset, limit=limit
        )
        return await trio.to_thread.run_sync(read, abandon_on_cancel=True)

    async def keep(self) -> None:
        """Write snapshots and views when records make them due, until cancelled (the
        session runs this beside its agents). One snapshot at a time: while one is being
        written, the records that make the next due only mark it (its fsync can take a
        second with many agents). The views are written at most every `VIEWS_EVERY`
        seconds, each write covering every view changed since the last."""
        while True:
            await self._due.wait()
            self._due = trio.Event()
            if self._snapshot_due:
                self._snapshot_due = False
                # A journal that failed is the agents' error, raised at their next record;
                # here it would cancel them all as the keeper's.
                with contextlib.suppress(SessionError):
                    await self.write_snapshot()
            if self._dirty_tasks or self._dirty_todos:
                await trio.sleep_until(self._views_due_at)
                await self.write_task_views()

    async def write_snapshot(self) -> None:
        """Write the small state. It never grows with the conversation, and it is written
        in a worker thread after the journal holds everything it reflects. A snapshot
        that cannot be written is a warning, never a failed turn: the journal is the truth."""
        async with self._snapshots:  # (and in order: an older one never replaces a newer)
            # Taken before waiting for the disk, so it reflects no record the flush below
            # does not cover (other agents go on folding records while it waits).
            mark = self.journal.mark
            data = self.state.snapshot_json(mark if mark.seq == self.state.seq else None)
            data += b"\n"
            await self.journal.flush()
            # Its bytes synced, its rename not: after a power cut, the old snapshot serves
            # as well as this one (resume replays the journal after either's seq).
            write = functools.partial(
                write_atomic, self.directory / SNAPSHOT, data, sync_rename=False
            )
            try:
                await trio.to_thread.run_sync(write)
            except OSError as exc:
                self._write_failed("the snapshot", self.directory / SNAPSHOT, exc)

    async def write_task_views(self) -> None:
        """Write `tasks/<id>.json` of each task, and `todos/<agent>.json` of each todo
        list, changed since they were last written."""
        async with self._views:
            began = trio.current_time()
            for directory, views in (
                (TASKS_DIR, self._task_views()),
                (TODOS_DIR, self._todo_views()),
            ):
                if not views:
                    continue
                try:
                    await trio.to_thread.run_sync(_write_views, self.directory / directory, views)
                except OSError as exc:
                    self._write_failed("the views in", self.directory / directory, exc)
            took = trio.current_time() - began
            self._views_due_at = began + max(VIEWS_EVERY, VIEWS_SHARE * took)

    async def _write_plan(self, plan: Plan) -> None:
        """`plan.json` and `plan.md`: the latest version, for people and tools, each
        replaced atomically (resume reads the journal's)."""
        files = {PLAN_JSON: plan_json(plan), PLAN_MD: render(plan).encode()}
        for name, data in files.items():
            try:
                await trio.to_thread.run_sync(write_atomic, self.directory / name, data)
            except OSError as exc:
                self._write_failed("the plan", self.directory / name, exc)

    def _todo_views(self) -> dict[str, bytes]:
        views = {
            agent: orjson.dumps(self.state.todos[agent].view(), option=orjson.OPT_INDENT_2) + b"\n"
            for agent in self._dirty_todos
            if agent in self.state.todos
        }
        self._dirty_todos.clear()
        return views

    def _task_views(self) -> dict[str, bytes]:
        """`tasks/<id>.json` of each task changed since the last snapshot: views for
        people and tools, a moment behind the journal at most; resume never reads them."""
        views = {}
        for task_id in self._dirty_tasks:
            record = self.state.tasks.get(task_id)
            if record is not None:
                views[task_id] = msgspec.json.format(msgspec.json.encode(record), indent=2) + b"\n"
        self._dirty_tasks.clear()
        return views

    def _write_failed(self, what: str, path: Path, exc: OSError) -> None:
        """A derived file could not be written: a warning, unless the disk refused it,
        which stops the session (its next record raises) before the journal fails too."""
        if not is_disk_error(exc):
            self.warn(f"could not write {what} {path}: {exc}")
        elif self._refused is None:
            self._refused = self._refusal(path, exc)

    def _refusal(self, path: Path, exc: OSError) -> StorageFailed:
        seq = self.journal.durable_seq
        return StorageFailed(
            f"writing {path} failed ({exc.strerror or exc}); the journal keeps every record "
            f"up to seq {seq}",
            path=path,
            cause=exc,
            kept_seq=seq,
        )

    async def set_status(self, status: SessionStatus, *, output: str | None = None) -> None:
        """Mirror the status, just journaled, in the manifest, with the journal's durable
        seq and length (docs/session-format.md#the-manifest-mirrors-the-journal), and the
        main agent's answer when given (`Manifest.output`). A disk that refuses the
        manifest raises `StorageFailed`; the journal has the status."""
        mark = self.journal.durable_mark
        update: dict[str, object] = {
            "status": status,
            "updated": now_stamp(),
            "journal_seq": mark.seq,
            "journal_size": mark.offset,
        }
        if output is not None:
            update["output"] = output
        manifest = msgspec.structs.replace(self.manifest, **update)
        # The status is in the journal already: the old manifest, if a power cut keeps it
        # (the rename is not synced), is brought up to the journal at the next open.
        write = functools.partial(write_manifest, self.directory, manifest, sync_rename=False)
        try:
            await trio.to_thread.run_sync(write)
        except OSError as exc:
            if not is_disk_error(exc):
                raise
            refused = self._refused or self._refusal(self.directory / MANIFEST, exc)
            self._refused = refused
            raise refused from exc
        self.manifest = manifest


@asynccontextmanager
async def open_session(
    root: Path,
    session_id: str,
    *,
    durability: Durability = Durability.BATCH,
    warn: Callable[[str], None],
) -> AsyncIterator[LiveSession]:
    directory = session_dir(root, session_id)
    if not directory.is_dir():
        raise SessionNotFound(f"no session {session_id!r} under {root}")
    with SessionLock(directory / LOCK):
        manifest = migrate(directory, read_manifest(directory))
        state, scan = await trio.to_thread.run_sync(load, directory, warn)
        if manifest.journal_seq > scan.last_seq:
            raise SessionError(
                f"{directory / JOURNAL} holds {scan.last_seq} records, but the session had "
                f"reached seq {manifest.journal_seq} ({directory / MANIFEST}): the journal "
                f"was emptied, replaced or cut short. {lost_records_advice(directory)}"
            )
        # The journal is the truth: a manifest left behind by a kill catches up with it.
        found = JournalStatus(state.status, scan.last_seq, scan.end_offset)
        try:
            manifest = await trio.to_thread.run_sync(mirror, directory, found, manifest)
        except OSError as exc:
            if not is_disk_error(exc):  # (a full disk is the journal's to report, next)
                warn(f"could not bring {directory / MANIFEST} up to the journal: {exc}")
        # Handing over the scan saves checking the whole file a second time.
        async with open_journal(directory / JOURNAL, durability=durability, scan=scan) as journal:
            live = LiveSession(session_id, directory, manifest, state, journal, warn)
            # The keeper's nursery is entered and exited by hand, as the journal's writer's
            # is, so that the block's own error reaches the caller bare, not grouped; and
            # the keeper is stopped here only (shielded from a cancel of the block).
            keeper = trio.CancelScope(shield=True)

            async def keep() -> None:
                with keeper:
                    await live.keep()

            keeping = trio.open_nursery()
            nursery = await keeping.__aenter__()
            nursery.start_soon(keep)
            ended = False
            try:
                yield live
                ended = True
            finally:
                keeper.cancel()
                try:
                    await keeping.__aexit__(None, None, None)  # (once a write in flight ends)
                finally:
                    # A snapshot is only a shortcut: if the journal has failed, its own
                    # error (raised as it closes) is the one to see, not this one.
                    with (
                        trio.CancelScope(shield=True),
                        trio.move_on_after(10),
                        contextlib.suppress(SessionError),
                    ):
                        await live.write_snapshot()
                        await live.write_task_views()  # those changed since the last write
                    if ended and live._refused is not None:  # (no record came to raise it)
                        warn(f"{live._refused}; the session is whole without it")
