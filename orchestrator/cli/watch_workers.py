"""What `sessions watch` shows of a session's tasks on workers (`--engine dbos --workers`):
their turns, replies and calls, read from their journals in the engine's database
(engine/shown.py), beside the session's own journal, as a local task's are shown.

The tasks' records are merged with the session's by the time each was written: those
already there when the watch reads them first wait in a heap until the session's record
of a later time is shown (a replay is in order throughout); a session followed as it
runs has the database looked at again every `POLL` seconds, what is waiting shown then.
A database it cannot read is said once, and the watch goes on with the session's journal.
"""

from __future__ import annotations

import argparse
import heapq
from collections.abc import Awaitable, Callable

import trio

from orchestrator.cli.engine import session_database
from orchestrator.cli.env import load_user_config
from orchestrator.engine.handover import SHOWN
from orchestrator.engine.shown import WorkerJournals, WorkersUnread
from orchestrator.errors import ConfigError
from orchestrator.state.events import Event, Record, record_decoder
from orchestrator.state.retell import RecordEvents
from orchestrator.state.settings import SettingsChosen
from orchestrator.view.history import written_at

POLL = 0.5  # seconds between two looks at the database, while the session runs

Show = Callable[[Event, float], Awaitable[None]]
"""Shows an event of a task on a worker, told from its record written at that time."""


class WorkerTasks:
    """The tasks on workers of the session being watched, once its settings say it has
    them (`notice` them as the journal gives them)."""

    def __init__(
        self, args: argparse.Namespace, session_id: str, show: Show, say: Callable[[str], None]
    ) -> None:
        self._args = args
        self._session = session_id
        self._show = show
        self._say = say
        self._journals: WorkerJournals | None = None  # once its settings say it has tasks there
        self._waiting: list[tuple[float, int, str, int, bytes]] = []  # the heap
        self._order = 0  # (ties in the heap keep their order of reading)
        self._told: dict[str, RecordEvents] = {}
        self._showing = trio.Lock()  # the heap is emptied by one at a time, in order
        self._reading = trio.Lock()  # and the database read by one at a time
        self._unread = False  # the database could not be read

    async def notice(self, record: Record, nursery: trio.Nursery, *, live: bool) -> None:
        """The session's `record` (each, in order): its first settings on workers start
        the reading; a session followed as it runs is looked at again in `nursery`."""
        if self._journals is not None or not isinstance(record, SettingsChosen):
            return
        settings = record.settings
        if not (settings.engine == "dbos" and settings.engine_workers):
            return
        try:
            url = session_database(settings, self._args, load_user_config(self._args))
        except ConfigError as exc:
            self._say(f"its tasks on workers are not shown: {exc}")
            return
        if not url:
            self._say("its tasks on workers are not shown: give --database-url URL")
            return
        journals = self._journals = WorkerJournals(url, self._session, patient=live)
        if await self._read(journals) and live:
            nursery.start_soon(self._keep_reading, journals)

    async def until(self, time: float) -> None:
        """Show what waits of the tasks' records written up to `time`."""
        async with self._showing:
            while self._waiting and self._waiting[0][0] <= time:
                await self._show_next()

    async def rest(self) -> None:
        """Show everything that waits."""
        async with self._showing:
            while self._waiting:
                await self._show_next()

    async def finish(self) -> None:
        """The session's journal has ended: its tasks' last records read, and shown."""
        if self._journals is not None and not self._unread:
            await self._read(self._journals)
        await self.rest()

    def close(self) -> None:
        if self._journals is not None:
            self._journals.close()

    async def _keep_reading(self, journals: WorkerJournals) -> None:
        while await self._read(journals):
            await trio.sleep(POLL)
            await self.rest()

    async def _read(self, journals: WorkerJournals) -> bool:
        """The new records, into the heap; False when the database cannot be read (said)."""
        try:
            async with self._reading:
                rows = await trio.to_thread.run_sync(journals.new, abandon_on_cancel=True)
        except WorkersUnread as exc:
            self._unread = True  # (said once: no look again)
            self._say(f"its tasks on workers are not shown: {journals.database}: {exc}")
            return False
        for task, seq, line in rows:
            self._order += 1
            heapq.heappush(self._waiting, (written_at(line), self._order, task, seq, line))
        return True

    async def _show_next(self) -> None:
        written, _, task, seq, line = heapq.heappop(self._waiting)
        told = self._told.setdefault(task, RecordEvents())
        record = record_decoder().decode(line.rstrip(b"\n"))
        for _, event in told.of(seq, record):
            if isinstance(event, SHOWN):
                await self._show(event, written)
