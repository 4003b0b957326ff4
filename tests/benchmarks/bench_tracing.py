"""What tracing costs (issue 43, item 5): W1 (bench_team.py: the main agent and 8
subagents of 20 rounds, a real session with the `batch` journal) with tracing off and on
to an in-process exporter (the SDK's `InMemorySpanExporter` behind its batch processor;
the metrics, aggregated by the run, to an in-memory exporter), interleaved A B A B in one
process (the time of `drive` and of closing the tracing after it; wall and CPU); and the
cost of one span, as the sink makes it (derived, then made and ended by the SDK).

    .venv/bin/python tests/benchmarks/bench_tracing.py [--runs N] [--tasks N] [--rounds N]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from orchestrator.session.live import open_session  # noqa: E402
from orchestrator.state.events import FanOut  # noqa: E402
from orchestrator.store import Durability  # noqa: E402
from orchestrator.team.drive import drive  # noqa: E402
from orchestrator.tools import ToolRegistry  # noqa: E402
from orchestrator.tracing import Ended, Telemetry, traced  # noqa: E402
from tests.benchmarks.bench_team import DEFINITIONS, Brain, Fixed, Timing, _session  # noqa: E402
from tests.benchmarks.shape import bench_session, bench_settings  # noqa: E402
from tests.tracing.memory import MemoryMetricExporter  # noqa: E402

MODES = ("off", "on", "spans")
"""Tracing off; on (spans and metrics, the default); on with `metrics = false`."""


async def run(root: Path, brain: Brain, mode: str) -> tuple[Timing, int]:
    """One W1 session; the times of `drive` and of closing its tracing (what the sink
    and the exporters left to do is the run's too), and the spans exported."""
    session_id, _ = bench_session(root)
    exporter = InMemorySpanExporter()
    telemetry = None if mode == "off" else Telemetry(metrics=mode == "on")
    timing = Timing()
    async with open_session(root, session_id, durability=Durability.BATCH, warn=print) as live:
        async with traced(
            live, telemetry, {}, span_exporter=exporter, metric_exporter=MemoryMetricExporter()
        ) as tracing:
            settings = bench_settings(
                brain,
                tools=ToolRegistry([Fixed()]),
                definitions=DEFINITIONS,
                session=_session(brain),
            )
            if tracing is not None:
                settings = dataclasses.replace(settings, ui=FanOut([settings.ui, tracing.sink]))
            timing.__enter__()
            result = await drive(live, settings)
        timing.__exit__()
        assert result.status == "completed", result
    return timing, len(exporter.get_finished_spans())


def once(brain: Brain, mode: str) -> tuple[Timing, int]:
    root = Path(tempfile.mkdtemp(prefix="bench-tracing-"))
    try:
        return trio.run(run, root, brain, mode)
    finally:
        shutil.rmtree(root)


def span_cost(count: int) -> float:
    """µs per span: derived ends made and ended by the SDK, to an in-memory exporter."""
    from orchestrator.tracing.otel import Exporter

    exporter = Exporter("ab" * 16, Telemetry(metrics=False), span_exporter=InMemorySpanExporter())
    spans = [
        Ended(f"call:{i}.0", "execute_tool fixed", "turn:main:1", i, i + 1, {"a": 1})
        for i in range(count)
    ]
    began = time.perf_counter()
    for ended in spans:
        exporter.export(ended)
    took = time.perf_counter() - began
    exporter.close()
    return took / count * 1e6


def count_cost(count: int) -> float:
    """µs per span taken into the metrics and counted at a collection (a model call: its
    tokens, time and cost; a tool call: its time), off the run's thread."""
    from orchestrator.tracing.metrics import Measures

    chat = {"gen_ai.agent.name": "worker", "gen_ai.request.model": "m"}
    chat |= {"gen_ai.usage.input_tokens": 300, "gen_ai.usage.output_tokens": 40}
    chat |= {"orchestrator.cost_usd": 0.001}
    call = {"gen_ai.tool.name": "fixed", "gen_ai.agent.name": "worker"}
    call |= {"orchestrator.call.status": "ok"}
    spans = [
        Ended(f"{kind}:{i}", kind, "turn:main:1", i, i + 1_000_000 * i, dict(attributes))
        for i in range(count // 2)
        for kind, attributes in (("chat", chat), ("call", call))
    ]
    measures = Measures()
    began = time.perf_counter()
    for ended in spans:
        measures.see(ended)
    measures.totals()
    return (time.perf_counter() - began) / len(spans) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    brain = lambda: Brain(args.tasks, args.rounds)  # noqa: E731
    for mode in MODES:
        once(brain(), mode)  # warm-up: imports, schemas, caches
    rows: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    spans = 0
    for _ in range(args.runs):
        for mode in MODES:  # A B C A B C
            b = brain()
            timing, exported = once(b, mode)
            rows[mode].append(timing.wall * 1000 / b.calls)
            cpu[mode].append(timing.cpu * 1000 / b.calls)
            spans = exported or spans
    off, off_cpu = statistics.median(rows["off"]), statistics.median(cpu["off"])
    for mode in MODES:
        figure = statistics.median(rows[mode])
        shown = ", ".join(f"{r:.3f}" for r in rows[mode])
        print(f"W1 {mode:<6} {figure:.3f} ms/round (median of {args.runs}: {shown})")
        print(f"          cpu {statistics.median(cpu[mode]):.3f} ms/round (all threads)")
    print(f"({spans} spans a run; spans: tracing on with metrics = false)")
    for mode in ("on", "spans"):
        ratio, ratio_cpu = (
            statistics.median(rows[mode]) / off,
            statistics.median(cpu[mode]) / off_cpu,
        )
        print(f"W1 {mode} / off {ratio:.2f} (cpu {ratio_cpu:.2f})")
    print(f"one span {span_cost(2000):.1f} µs (derived, made and ended by the SDK)")
    print(f"one span's metrics {count_cost(2000):.1f} µs (taken, then counted at a collection)")


if __name__ == "__main__":
    main()
