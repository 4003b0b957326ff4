"""From asyncio: the library runs on trio, so an asyncio program's `run` or `resume`
runs it with `trio.run` in a thread of its own, one per call (`in_trio`), while the
program's loop goes on. The program's callbacks (events, approvals, answers) run on its
own loop and thread (`CallerLoop`), and the trio side waits for each without blocking its
thread, so an agent waits for its sink as it does under trio.

Not trio's guest mode: guest mode puts trio on the host loop's thread, and two runs at
once on one loop would clash there. A thread per run keeps each run's trio to itself.

Cancelling the asyncio task that awaits a run cancels the trio run (through its token and
a cancel scope), waits for it to record `interrupted` and end, then raises
`CancelledError`. Whatever else the trio side raises reaches the caller as itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import threading
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar, final

import sniffio
import trio

from orchestrator.state.events import Event, EventSink

T = TypeVar("T")
A = TypeVar("A")
R = TypeVar("R")


def from_asyncio() -> bool:
    """Whether the calling task runs on asyncio (True) or trio (False)."""
    library = sniffio.current_async_library()
    if library not in ("trio", "asyncio"):
        raise RuntimeError(f"orchestrator runs under trio or asyncio, not {library}")
    return library == "asyncio"


async def in_trio(work: Callable[[], Awaitable[T]]) -> T:
    """`work()` run by `trio.run` in a new thread, awaited from asyncio without blocking
    its loop. Cancelling the awaiting task cancels the work and waits for its end."""
    stop = _Stop()
    ended: concurrent.futures.Future[T] = concurrent.futures.Future()
    # A daemon: the caller always waits for the run's end, so only a program that quits
    # without waiting leaves it behind, and then a journaled session is safe to cut off.
    thread = threading.Thread(
        target=_run_trio, args=(work, stop, ended), name="orchestrator-trio", daemon=True
    )
    thread.start()
    done = asyncio.wrap_future(ended)
    try:
        await asyncio.wait([done])  # unlike `await done`, a cancellation leaves `done` be
    except asyncio.CancelledError as cancelled:
        stop.ask()
        await outlast(done)  # a second cancellation is raised once it has ended
        error = None if done.cancelled() else done.exception()
        if error is not None:
            raise error from cancelled  # it failed as it stopped: that says more
        raise
    return done.result()


def _run_trio(
    work: Callable[[], Awaitable[T]], stop: _Stop, ended: concurrent.futures.Future[T]
) -> None:
    """The thread: the whole trio run, its outcome handed to the asyncio side (cancelled
    when the caller stopped it)."""
    try:
        trio.run(_stoppable, work, stop, ended)
    except BaseException as exc:  # every outcome goes back to the caller, none stays here
        ended.set_exception(exc)
    if not ended.done():
        ended.cancel()


async def _stoppable(
    work: Callable[[], Awaitable[T]], stop: _Stop, ended: concurrent.futures.Future[T]
) -> None:
    with trio.CancelScope() as scope:
        stop.attach(scope)
        ended.set_result(await work())


@final
class _Stop:
    """Cancels the trio run from the asyncio thread, whether it has started yet or not."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asked = False
        self._scope: trio.CancelScope | None = None
        self._token: trio.lowlevel.TrioToken | None = None

    def attach(self, scope: trio.CancelScope) -> None:
        """On the trio thread, as the run starts."""
        with self._lock:
            self._scope, self._token = scope, trio.lowlevel.current_trio_token()
            if self._asked:
                scope.cancel()

    def ask(self) -> None:
        """On the asyncio thread."""
        with self._lock:
            self._asked = True
            if self._scope is not None and self._token is not None:
                _soon(self._token, self._scope.cancel)


async def outlast(future: asyncio.Future[Any]) -> None:
    """Wait for `future` to end, even if the waiting task is cancelled meanwhile; then
    raise that cancellation."""
    cancelled = None
    while not future.done():
        try:
            await asyncio.wait([future])  # unlike `await future`, leaves `future` be
        except asyncio.CancelledError as exc:
            cancelled = exc
    if cancelled is not None:
        raise cancelled


def _soon(token: trio.lowlevel.TrioToken, fn: Callable[[], object]) -> None:
    """`fn()` on the trio thread, unless its run has ended (then nothing waits for it)."""
    with contextlib.suppress(trio.RunFinishedError):
        token.run_sync_soon(fn)


@final
class CallerLoop:
    """The asyncio loop of the program that called, seen from the trio thread: made on
    that loop, it turns the program's callbacks into ones the trio side awaits."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()

    def function(self, fn: Callable[[A], Awaitable[R] | R]) -> Callable[[A], Awaitable[R]]:
        """`fn` (plain or async), called on the caller's loop."""

        async def on_caller_loop(argument: A) -> R:
            return await self.call(partial(_called, fn, argument))

        return on_caller_loop

    def sink(self, sink: EventSink) -> EventSink:
        """`sink`, its `emit` run on the caller's loop."""
        return _CallerSink(self, sink)

    def bridged(self, sink: EventSink) -> EventSink:
        """On the trio thread: `sink` (a trio one) as code on the caller's loop may call
        it (a coroutine tool's `ctx.report_progress`)."""
        return _TrioSide(sink, trio.lowlevel.current_trio_token())

    async def call(self, fn: Callable[[], Awaitable[R]]) -> R:
        """On the trio thread: `fn()` awaited on the caller's loop; its result, or its
        exception. Cancelled, it cancels the call there."""
        called = asyncio.run_coroutine_threadsafe(_awaited(fn), self._loop)
        token = trio.lowlevel.current_trio_token()
        answered = trio.Event()
        called.add_done_callback(lambda _: _soon(token, answered.set))
        try:
            await answered.wait()
        finally:
            called.cancel()  # nothing once it is done
        return called.result()


async def _awaited(fn: Callable[[], Awaitable[R]]) -> R:
    return await fn()


async def _called(fn: Callable[[A], Awaitable[R] | R], argument: A) -> R:
    """`fn(argument)`, awaited if it is a coroutine."""
    result = fn(argument)
    return await result if inspect.isawaitable(result) else result


@final
class _CallerSink:
    def __init__(self, caller: CallerLoop, sink: EventSink) -> None:
        self._caller = caller
        self._sink = sink

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        await self._caller.call(partial(self._sink.emit, event, durable=durable))


@final
class _TrioSide:
    """A trio sink called from the caller's loop: each `emit` runs on the trio thread, as
    a system task, and is awaited on the caller's loop without blocking it (blocking it
    would stop a sink of the caller's that the trio side waits for)."""

    def __init__(self, sink: EventSink, token: trio.lowlevel.TrioToken) -> None:
        self._sink = sink
        self._token = token

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        done: concurrent.futures.Future[None] = concurrent.futures.Future()

        def start() -> None:
            trio.lowlevel.spawn_system_task(self._emit, event, durable, done)

        try:
            self._token.run_sync_soon(start)
        except trio.RunFinishedError:
            return  # the run is over: nobody reads its progress
        await asyncio.wrap_future(done)

    async def _emit(
        self, event: Event, durable: bool, done: concurrent.futures.Future[None]
    ) -> None:
        try:
            await self._sink.emit(event, durable=durable)
        except trio.Cancelled:
            done.cancel()  # the run is ending: the caller's side sees a cancellation
            raise
        except Exception as exc:  # the caller's side raises it; a system task must not
            done.set_exception(exc)
        else:
            done.set_result(None)
