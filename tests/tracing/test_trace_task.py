"""A task on a worker's spans, derived from its own journal (tracing/task.py): keyed by
the task (its refs are its journal's, not the session's), its own task span and the runs
left to the session, and a worker that takes the task over after a kill gives again what
the killed one ended and ends as interrupted what it left open."""

from __future__ import annotations

import threading
from contextlib import AsyncExitStack

from orchestrator.messages import AssistantMessage, SystemMessage, ToolCall, Usage
from orchestrator.state.events import (
    AgentStarted,
    AssistantReplied,
    CallResult,
    EffectStarted,
    Record,
    TurnStarted,
)
from orchestrator.state.settings import SessionSettings, SettingsChosen
from orchestrator.state.tasks import TaskCreated
from orchestrator.store._line import encode
from orchestrator.tracing import Spans
from orchestrator.tracing.replay import read_rows
from orchestrator.tracing.task import trace_of

MS = 1_000_000


def _reply(*tools: str) -> AssistantReplied:
    calls = tuple(ToolCall(id=f"c{i}", name=tool, arguments="{}") for i, tool in enumerate(tools))
    usage = Usage(input_tokens=10, output_tokens=2)
    return AssistantReplied(
        agent="t1", message=AssistantMessage(tool_calls=calls, usage=usage), model="s:m"
    )


BEGUN: list[Record] = [  # as the session writes it (engine/handover.py), then the worker
    SettingsChosen(agent="main", settings=SessionSettings(engine="dbos", engine_workers=True)),
    AgentStarted(agent="t1", role="worker", messages=(SystemMessage(content="w"),)),
    TaskCreated(agent="main", task="t1", agent_type="worker", description="a", ref="3.0"),
    TurnStarted(agent="t1"),
    _reply("write_file", "shell"),  # seq 5: its calls are 5.0 and 5.1
    CallResult(agent="t1", ref="5.0", status="ok", content="wrote"),
    EffectStarted(agent="t1", ref="5.1"),  # the kill: the shell call never ended
]


def _rows(records: list[Record]) -> list[tuple[int, bytes]]:
    return [
        (seq, encode(seq, 1000 + seq, r.kind, r.agent, r.journal_body(), end=True))
        for seq, r in enumerate(records, 1)
    ]


def test_a_task_not_begun_gives_nothing() -> None:
    assert read_rows(_rows(BEGUN[:3]), Spans("s", on_worker="t1")) == []


def test_a_worker_taking_a_task_over_gives_what_the_killed_one_did() -> None:
    spans = Spans("s", on_worker="t1")
    again = read_rows(_rows(BEGUN), spans)
    shown = [(e.key, e.name, e.parent, e.error, e.end // MS) for e in again]
    assert shown == [
        ("chat:t1:1", "chat m", "turn:t1:1", "", 1005),
        ("call:t1/5.0", "execute_tool write_file", "turn:t1:1", "", 1006),
        ("turn:t1:1", "invoke_agent worker", "task:t1", "interrupted", 1007),
        ("call:t1/5.1", "execute_tool shell", "turn:t1:1", "interrupted", 1007),
    ]  # (not `task:t1`: the session's, ended when the task settles)
    # What the new worker's loop does next hangs under the same turn, keyed by the task.
    ended = spans.see(_reply("complete"), 2000 * MS, None)
    assert [(e.key, e.parent) for e in ended] == [("chat:t1:2", "turn:t1:1")]


def test_the_session_leaves_its_tasks_on_workers_to_them() -> None:
    """What the session is shown of a task on a worker makes no span there."""
    spans = Spans("s")
    for at, record in enumerate(BEGUN[:3]):
        assert spans.see(record, at) == []
    assert spans.see(TurnStarted(agent="t1"), 4) == []
    assert spans.see(_reply("write_file"), 5) == []
    assert list(spans.open) == ["task:t1"]
    local = Spans("s")  # (its tasks in its own process: their records are its own)
    local.see(SettingsChosen(agent="main", settings=SessionSettings()), 0)
    local.see(TurnStarted(agent="t1"), 4)
    assert [e.key for e in local.see(_reply(), 5)] == ["chat:t1:1"]


def test_a_trace_id_is_read_from_a_traceparent() -> None:
    assert trace_of(f"00-{'ab' * 16}-{'cd' * 8}-01") == "ab" * 16
    for wrong in ("", "00-zz-cd-01", f"00-{'0' * 32}-{'cd' * 8}-01", "garbage"):
        assert trace_of(wrong) is None


def test_a_child_of_a_task_on_a_worker_hangs_under_its_own_task_span() -> None:
    """A task on a worker delegates (engine/children.py): its child `t3.t1`, on a worker,
    hangs its turns under `task:t3.t1`, which the parent's worker gives, under its
    delegating call."""
    parent = Spans("s", on_worker="t3")
    created = TaskCreated(agent="t3", task="t3.t1", agent_type="worker", description="c", ref="5.0")
    parent.see(created, 1)
    assert parent.open["task:t3.t1"].parent == "call:t3/5.0"
    child = Spans("s", on_worker="t3.t1")
    child.see(TurnStarted(agent="t3.t1"), 2)
    assert child.open["turn:t3.t1:1"].parent == "task:t3.t1"


async def test_a_workers_tasks_share_one_exporter_whose_metrics_sum_them_all() -> None:
    """Two traced tasks at once on a worker: one span processor and one metrics thread
    between them, each task's spans in its own session's trace and sent as it ends, and
    one collection at the worker's stop summing both tasks' tokens (a counter that an
    exporter per task would have shown reset)."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from orchestrator.tracing import Telemetry
    from orchestrator.tracing.task import TaskTracing
    from tests.tracing.memory import MemoryMetricExporter

    spans, metrics = InMemorySpanExporter(), MemoryMetricExporter()
    tracing = TaskTracing(Telemetry(), {}, span_exporter=spans, metric_exporter=metrics)
    traces = {"s1": "ab" * 16, "s2": "cd" * 16}
    async with AsyncExitStack() as both:
        for session, trace in traces.items():
            sink = await both.enter_async_context(
                tracing(f"{session}/t1", f"00-{trace}-{'ef' * 8}-01", _rows(BEGUN[:4]))
            )
            assert sink is not None
            await sink.emit(_reply("complete"))  # (its chat span ends)
        assert _exporting() == ["OtelBatchSpanRecordProcessor", "orchestrator-metrics"]
    sent = {
        (format(span.context.trace_id, "032x"), span.name) for span in spans.get_finished_spans()
    }
    assert {(trace, name) for trace, name in sent if name.startswith("chat")} == {
        (trace, "chat m") for trace in traces.values()
    }  # (beside each task's turn, ended as interrupted as this worker took it over)
    assert metrics.exported == []  # (the metrics go every minute, and at the stop)
    await tracing.close()
    assert metrics.shut_down
    (data,) = metrics.exported
    usage = [m for s in data.resource_metrics for sm in s.scope_metrics for m in sm.metrics]
    tokens = next(m for m in usage if m.name == "gen_ai.client.token.usage")
    assert sorted(p.sum for p in tokens.data.data_points) == [4, 20]  # (both tasks')
    assert _exporting() == []


def _exporting() -> list[str]:
    """The threads of exporters running: span processors' and metrics'."""
    names = ("OtelBatchSpanRecordProcessor", "orchestrator-metrics")
    return sorted(t.name for t in threading.enumerate() if t.name in names)


async def test_a_task_of_a_session_not_traced_is_not_traced_on_the_worker() -> None:
    from orchestrator.tracing import Telemetry
    from orchestrator.tracing.task import TaskTracing

    tracing = TaskTracing(Telemetry(), {})
    async with tracing("s1/t1", "", _rows(BEGUN)) as sink:
        assert sink is None
    await tracing.close()  # (nothing made: nothing to close)
