"""A task on a worker, traced (docs/tracing.md): its turns, model calls and tool calls
exported by the worker that runs it into its session's trace, under the task's span,
which the session exports. The task's workflow carries the delegating call's
`traceparent` (engine/remote.py), which names the trace; the spans' ids derive from the
trace and the task's own journal, as the session's do from its journal, so a worker
that takes the task over after a crash continues them."""

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

_HEX = frozenset("0123456789abcdef")


def trace_of(traceparent: str) -> str | None:
    """The trace id a W3C `traceparent` names (None: not one)."""
    parts = traceparent.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or not set(parts[1]) <= _HEX:
        return None
    return None if parts[1] == "0" * 32 else parts[1]


@asynccontextmanager
async def traced_task(
    key: str,
    traceparent: str,
    rows: Iterable[tuple[int, bytes]],
    telemetry: Telemetry | None,
    prices: Mapping[str, Price],
    **exporting: Any,
) -> AsyncIterator[TraceSink | None]:
    """The sink that traces task `key` (`<session id>/<task id>`) while the block runs,
    on the worker; its journal so far is `rows`. None: this worker's telemetry is off,
    or the session was not traced (no `traceparent`)."""
    trace_id = trace_of(traceparent)
    if telemetry is None or trace_id is None:
        yield None
        return
    session_id, _, task_id = key.rpartition("/")
    spans = Spans(session_id, prices, telemetry.capture_content, on_worker=task_id)
    again = await trio.to_thread.run_sync(read_rows, rows, spans)
    exporter = exporter_class()(trace_id, telemetry, **exporting)
    for ended in again:
        exporter.export(ended, measure=False)
    sink = TraceSink(spans, exporter)
    try:
        yield sink
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(exporter.close)
