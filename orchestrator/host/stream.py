"""A run's events pulled rather than pushed:

    async with orc.stream(goal, model=...) as events:
        async for event in events:
            ...
    events.result  # the RunResult

`stream` takes `run`'s keywords but `on_event`; `stream_resume` takes `resume`'s. Two
names, as `run` and `resume` are two: each takes exactly the keywords of its twin (a
`resume=` switch on one call would make `goal` mean nothing for a resume and leave half
the keywords to only one of the two uses).

The run goes on in the block's background and waits while `buffer` events are unread,
as it waits for a slow `on_event`. Leaving the block before the run ends stops it: the
session is recorded `interrupted`, `result` raises (there is none), and
`resume(events.session_dir)` goes on with it. Under trio the run is a task in a nursery
of the block and the events come through a memory channel; under asyncio, a task of the
caller's loop and an `asyncio.Queue`, the run itself going through host/aio.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import NoReturn, final

import trio

from orchestrator.host.aio import from_asyncio, outlast
from orchestrator.host.options import EventHandler, StreamOptions, StreamResumeOptions, takes
from orchestrator.host.run import check_on_team, in_memory, locate, new_session, resumed
from orchestrator.state.events import Event
from orchestrator.team.drive import RunResult

Start = Callable[[EventHandler], Awaitable[RunResult]]
"""A run, given where its events go."""


@final
class EventStream:
    """The events of one run as they happen (`async for`), then its `result`."""

    def __init__(
        self, session_dir: Path | None, receive: Callable[[], Awaitable[Event | None]]
    ) -> None:
        self.session_dir = session_dir  # the session's directory, for a resume (None: in memory)
        self._result: RunResult | None = None  # once the run has returned
        self._receive = receive  # the next event; None once the run ended and all are read
        self._ended = False
        self._error: Exception | None = None  # what the run raised, for the reader
        self._raised = False

    @property
    def result(self) -> RunResult:
        """The run's result, once its events have all been read; a `RuntimeError`
        before, or when the block was left before the run ended (it was stopped:
        resume `session_dir`)."""
        if self._result is None:
            raise RuntimeError(
                "the run has no result: read its events to their end first (a block left "
                "before the run ended stopped it; resume(events.session_dir) goes on)"
            )
        return self._result

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        event = None if self._ended else await self._receive()
        if event is not None:
            return event
        self._ended = True
        self._raise_error()
        raise StopAsyncIteration

    async def _run(self, start: Start, deliver: EventHandler) -> None:
        """The run, its result or its error kept for the reader."""
        try:
            self._result = await start(deliver)
        except Exception as exc:  # raised to the reader after the events before it
            self._error = exc

    def _close(self) -> None:
        """The block has ended: no more events (those unread are dropped)."""
        self._ended = True

    def _raise_error(self) -> None:
        """What the run raised, once: after its last event, or as the block ends."""
        if self._error is not None and not self._raised:
            self._raised = True
            raise self._error


@asynccontextmanager
async def _on_trio(
    start: Start, session_dir: Path | None, buffer: int
) -> AsyncIterator[EventStream]:
    send, receive = trio.open_memory_channel[Event](buffer)

    async def next_event() -> Event | None:
        try:
            return await receive.receive()
        except trio.EndOfChannel:
            return None

    async def deliver(event: Event) -> None:
        with contextlib.suppress(trio.BrokenResourceError):  # the reader left; it is journaled
            await send.send(event)

    events = EventStream(session_dir, next_event)

    async def pump() -> None:
        async with send:  # closed: the run has ended, every event is sent
            await events._run(start, deliver)

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump)
            try:
                yield events
            finally:
                events._close()
                receive.close()  # a run still going drops its events from here on,
                nursery.cancel_scope.cancel()  # and stops: `interrupted`
    except BaseExceptionGroup as group:
        _raise_alone(group)
    events._raise_error()


def _raise_alone(group: BaseExceptionGroup[BaseException]) -> NoReturn:
    """The block's own error, not wrapped by the nursery (the pump raises none of its
    own); several, as they came."""
    if len(group.exceptions) != 1:
        raise group
    error = group.exceptions[0]
    context = error.__context__
    try:
        raise error
    finally:
        error.__context__ = context  # as it was, not the group


@asynccontextmanager
async def _on_asyncio(
    start: Start, session_dir: Path | None, buffer: int
) -> AsyncIterator[EventStream]:
    queue: asyncio.Queue[Event | None] = asyncio.Queue(buffer)  # None: the run has ended
    left = asyncio.Event()  # the reader left the block

    async def deliver(event: Event) -> None:  # on this loop (host/aio.py)
        if not left.is_set():
            await queue.put(event)

    events = EventStream(session_dir, queue.get)

    async def pump() -> None:
        await events._run(start, deliver)
        if not left.is_set():
            await queue.put(None)

    task = asyncio.create_task(pump())
    try:
        yield events
    finally:
        events._close()
        left.set()
        task.cancel()  # a run still going stops: `interrupted`
        await outlast(task)
    events._raise_error()


@asynccontextmanager
async def _pulled(
    start: Start, session_dir: Path | None, buffer: int
) -> AsyncIterator[EventStream]:
    if buffer < 1:
        raise ValueError(f"buffer must be at least 1, not {buffer}")
    opened = _on_asyncio if from_asyncio() else _on_trio
    async with opened(start, session_dir, buffer) as events:
        yield events


@asynccontextmanager
@takes(StreamOptions)
async def stream(given: StreamOptions) -> AsyncIterator[EventStream]:
    """`run(goal, ...)` as an `EventStream` of its events: the keywords are `run`'s but
    `on_event`, and `buffer`."""
    check_on_team(given.on_team)  # before a session is made for nothing
    directory = None if given.in_memory else new_session(given)

    def start(on_event: EventHandler) -> Awaitable[RunResult]:
        if directory is None:
            return in_memory(given, on_event)
        # A session made and not yet run resumes from its start: that is `run`.
        return resumed(given, directory, None, model=given.model, message="", on_event=on_event)

    async with _pulled(start, directory, given.buffer) as events:
        yield events


@asynccontextmanager
@takes(StreamResumeOptions)
async def stream_resume(given: StreamResumeOptions) -> AsyncIterator[EventStream]:
    """`resume(session, ...)` as an `EventStream` of its events: the keywords are
    `resume`'s but `on_event`, and `buffer` as for `stream`."""
    root, session_id = locate(given.session, given.sessions_dir)

    def start(on_event: EventHandler) -> Awaitable[RunResult]:
        return resumed(
            given,
            root / session_id,
            None,
            model=given.model,
            message=given.message,
            on_event=on_event,
        )

    async with _pulled(start, root / session_id, given.buffer) as events:
        yield events
