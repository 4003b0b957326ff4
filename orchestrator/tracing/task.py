"""A task on a worker, traced (docs/tracing.md): its turns, model calls and tool calls
exported by the worker that runs it into its session's trace, under the task's span,
which the session exports. The task's workflow carries the delegating call's
`traceparent` (engine/remote.py), which names the trace; the spans' ids derive from the
trace and the task's own journal, as the session's do from its journal, so a worker
that takes the task over after a crash continues them.

A worker has one exporter for all its tasks (`TaskTracing`): one span processor and one
metrics thread, and metrics that sum what all its tasks did, as a counter should (an
exporter per task made two threads each, and each task's sums read as counter resets)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from orchestrator.tracing.replay import read_rows
from orchestrator.tracing.run import TraceSink, exporter_class
from orchestrator.tracing.settings import Telemetry
from orchestrator.tracing.spans import Spans

if TYPE_CHECKING:
    from orchestrator.prices.cost import Price
    from orchestrator.tracing.otel import Exporter

_HEX = frozenset("0123456789abcdef")


def trace_of(traceparent: str) -> str | None:
    """The trace id a W3C `traceparent` names (None: not one)."""
    parts = traceparent.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or not set(parts[1]) <= _HEX:
        return None
    return None if parts[1] == "0" * 32 else parts[1]


class TaskTracing:
    """How a worker traces the tasks of traced sessions: `tracing(key, traceparent,
    rows)` is the sink that traces task `key` while the block runs. Its exporter is made
    at the first traced task, shared by the others, and closed by `close` as the worker
    stops; what a task ended is sent as the task's block ends. `exporting`: the
    `Exporter`'s (tests)."""

    def __init__(self, telemetry: Telemetry, prices: Mapping[str, Price], **exporting: Any) -> None:
        self._telemetry = telemetry
        self._prices = prices
        self._exporting = exporting
        self._made: Exporter | None = None

    def _exporter(self, trace_id: str) -> Exporter:
        if self._made is None:
            self._made = exporter_class()(trace_id, self._telemetry, **self._exporting)
            return self._made
        return self._made.joined(trace_id)

    @asynccontextmanager
    async def __call__(
        self, key: str, traceparent: str, rows: Iterable[tuple[int, bytes]]
    ) -> AsyncIterator[TraceSink | None]:
        """The sink that traces task `key` (`<session id>/<task id>`) while the block
        runs; its journal so far is `rows`. None: the session was not traced (no
        `traceparent`)."""
        trace_id = trace_of(traceparent)
        if trace_id is None:
            yield None
            return
        session_id, _, task_id = key.rpartition("/")
        spans = Spans(session_id, self._prices, self._telemetry.capture_content, on_worker=task_id)
        again = await trio.to_thread.run_sync(read_rows, rows, spans)
        exporter = self._exporter(trace_id)
        for ended in again:
            exporter.export(ended, measure=False)
        try:
            yield TraceSink(spans, exporter)
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(exporter.flush)

    async def close(self, *, patience: float = 5.0) -> None:
        """Send what is queued and stop the exporter, waiting at most `patience` seconds
        for the endpoint (the spans of a task not sent are sent again by the worker that
        takes it over: tracing/replay.py)."""
        made, self._made = self._made, None
        if made is None:
            return
        with trio.CancelScope(shield=True, deadline=trio.current_time() + patience):
            await trio.to_thread.run_sync(made.close, abandon_on_cancel=True)
