"""A traced run: the sink that turns the session's events into spans, opened beside the
session by whoever runs it (`cli/`, `host/`): `traced(live, telemetry, prices)`."""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from orchestrator.errors import ConfigError
from orchestrator.loop.compaction import CompactionStarted
from orchestrator.state.events import Event, ToolCallStarted
from orchestrator.state.manifest import write_manifest
from orchestrator.tracing.ended import call_key, traceparent
from orchestrator.tracing.replay import read_back
from orchestrator.tracing.settings import Telemetry
from orchestrator.tracing.spans import Spans

if TYPE_CHECKING:
    from orchestrator.prices.cost import Price
    from orchestrator.session.live import LiveSession
    from orchestrator.tracing.otel import Exporter

# Events that are no record but open a span (the rest are seen as their records).
_OPENING = (ToolCallStarted, CompactionStarted)


class TraceSink:
    """An event sink (after the journal): each event seen as its record, the spans it
    ends exported at once."""

    def __init__(
        self, spans: Spans, exporter: Exporter, clock: Callable[[], int] = time.time_ns
    ) -> None:
        self._spans = spans
        self._exporter = exporter
        self._clock = clock

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        item = event if isinstance(event, _OPENING) else event.record()
        if item is None:
            return
        for ended in self._spans.see(item, self._clock()):
            self._exporter.export(ended)


@dataclass(frozen=True)
class Tracing:
    """A traced run: its sink, and the trace (`TRACEPARENT` of a call's commands)."""

    sink: TraceSink
    trace_id: str

    def trace_parent(self, ref: str) -> str:
        """The `traceparent` of the call `ref`'s span."""
        return traceparent(self.trace_id, call_key(ref))


@asynccontextmanager
async def traced(
    live: LiveSession | None,
    telemetry: Telemetry | None,
    prices: Mapping[str, Price],
    **exporting: Any,
) -> AsyncIterator[Tracing | None]:
    """Trace the run of `live` while the block runs (None: `telemetry` is off, or no
    session on disk). Its trace is the manifest's, or a new one written there; the spans
    of its earlier runs are known again from the journal, and those a kill left open are
    exported as interrupted first. `exporting`: the `Exporter`'s (tests, benchmarks)."""
    if telemetry is None or live is None:
        yield None
        return
    Exporter = exporter_class()
    trace_id = await _trace_of(live)
    spans = Spans(live.id, prices, telemetry.capture_content)
    interrupted = await trio.to_thread.run_sync(read_back, live.directory, spans)
    exporter = Exporter(trace_id, telemetry, **exporting)
    for ended in interrupted:
        exporter.export(ended, measure=False)
    if interrupted:  # (sent now: a kill of this run must not lose them)
        await trio.to_thread.run_sync(exporter.flush)
    try:
        yield Tracing(TraceSink(spans, exporter), trace_id)
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(exporter.close)


def exporter_class() -> type[Exporter]:
    """The SDK's side (tracing/otel.py), imported now; a `ConfigError` without it."""
    try:
        from orchestrator.tracing.otel import Exporter
    except ImportError as exc:
        raise ConfigError(
            f"tracing needs OpenTelemetry's SDK ({exc}): pip install 'orchestrator[otel]', "
            "or turn [telemetry] off"
        ) from None
    return Exporter


async def _trace_of(live: LiveSession) -> str:
    """The session's trace id: the manifest's, else a new one, written there first."""
    trace_id = live.manifest.trace_id
    if isinstance(trace_id, str) and trace_id:
        return trace_id
    trace_id = secrets.token_hex(16)
    manifest = msgspec.structs.replace(live.manifest, trace_id=trace_id)
    await trio.to_thread.run_sync(functools.partial(write_manifest, live.directory, manifest))
    live.manifest = manifest
    return trace_id
