"""The fold: one state, however it is reached (from the start, or from any snapshot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.assessment import Assessed, BlockedReported, Verified
from orchestrator.context import CONTEXT_FOLDS
from orchestrator.events import (
    RECORD_ADAPTER,
    AgentStarted,
    AssistantReplied,
    CallResult,
    EffectStarted,
    MessageAdded,
    Record,
    SessionStatusChanged,
    TurnEnded,
    TurnStarted,
)
from orchestrator.messages import AssistantMessage, SystemMessage, ToolCall, Usage, UserMessage
from orchestrator.session import JOURNAL, SNAPSHOT, load_state
from orchestrator.state import _SMALL_FOLDS, SessionState
from orchestrator.store._line import encode
from orchestrator.todos import TodoItem, TodosChanged

STATUSES = ["pending", "in_progress", "completed", "failed"]

texts = st.text(max_size=20)


@st.composite
def sessions(draw: st.DrawFn) -> list[Record]:
    """A plausible journal: agents start, talk, call tools (some with side effects), get
    results in any order, open and close turns; provider call ids may repeat."""
    records: list[Record] = []
    open_refs: dict[str, list[str]] = {}
    for _ in range(draw(st.integers(1, 40))):
        agents = sorted(open_refs)
        choices = ["agent"]
        if agents:
            choices += ["message", "reply", "turn_start", "turn_end", "status", "todos"]
            choices += ["assessed", "verified", "blocked"]
        if any(open_refs.values()):
            choices += ["effect", "result"]
        op = draw(st.sampled_from(choices))
        seq = len(records) + 1
        agent = draw(st.sampled_from(agents)) if agents else ""
        match op:
            case "agent":
                agent = draw(st.sampled_from(["main", "w1", "w2"]))
                messages = (SystemMessage(content=draw(texts)), UserMessage(content=draw(texts)))
                records.append(AgentStarted(agent=agent, role="r", messages=messages))
                open_refs[agent] = []
            case "reply":
                count = draw(st.integers(0, 3))
                calls = tuple(
                    ToolCall(id=draw(st.sampled_from(["c0", "c1", ""])) + str(i), name="t")
                    for i in range(count)
                )
                usage = draw(st.none() | st.builds(Usage, input_tokens=st.integers(0, 99)))
                message = AssistantMessage(text=draw(texts), tool_calls=calls, usage=usage)
                records.append(AssistantReplied(agent=agent, message=message, model="m"))
                open_refs[agent] = [f"{seq}.{i}" for i in range(count)]
            case "message" | "turn_start" | "turn_end" | "status":
                records.append(_plain_record(draw, op, agent))
            case "todos" | "assessed" | "verified" | "blocked":
                records.append(_progress_record(draw, op, agent, seq, bool(open_refs[agent])))
            case "effect" | "result":
                agent = draw(st.sampled_from([a for a in agents if open_refs[a]]))
                ref = draw(st.sampled_from(open_refs[agent]))
                if op == "effect":
                    records.append(EffectStarted(agent=agent, ref=ref))
                else:
                    open_refs[agent].remove(ref)
                    status = draw(st.sampled_from(["ok", "error", "interrupted"]))
                    records.append(
                        CallResult(agent=agent, ref=ref, status=status, content=draw(texts))
                    )
    return records


def _plain_record(draw: st.DrawFn, op: str, agent: str) -> Record:
    match op:
        case "message":
            return MessageAdded(agent=agent, message=UserMessage(content=draw(texts)))
        case "turn_start":
            return TurnStarted(agent=agent)
        case "turn_end":
            return TurnEnded(agent=agent, reason="completed", rounds=1)
    status = draw(st.sampled_from(["running", "completed", "failed"]))
    return SessionStatusChanged(agent=agent, status=status)


def _progress_record(draw: st.DrawFn, op: str, agent: str, seq: int, open_calls: bool) -> Record:
    """A todo or assessment record of `agent`."""
    # A note enters the context: never between a reply and its results.
    note = "" if open_calls else draw(texts)
    match op:
        case "todos":
            statuses = draw(st.lists(st.sampled_from(STATUSES), max_size=3))
            items = tuple(
                TodoItem(id=str(n), content=draw(texts) or "x", status=status)
                for n, status in enumerate(statuses)
            )
            return TodosChanged(
                agent=agent,
                ref=f"{seq}.0",
                replace=draw(st.booleans()),
                goal=draw(st.none() | texts),
                items=items,
            )
        case "assessed":
            action = draw(st.sampled_from(["continue_from_context", "verify", "completed"]))
            return Assessed(agent=agent, action=action, reasons=(draw(texts),), note=note)
        case "verified":
            return Verified(agent=agent, passed=draw(st.booleans()), commands=("c",), note=note)
    return BlockedReported(agent=agent, category="input", reason=draw(texts))


def write_journal(directory: Path, records: list[Record]) -> None:
    lines = [
        encode(seq, 1000 * seq, r.kind, r.agent, r.journal_body(), end=True)
        for seq, r in enumerate(records, 1)
    ]
    (directory / JOURNAL).write_bytes(b"".join(lines))


def fold(records: list[Record]) -> SessionState:
    state = SessionState()
    for seq, record in enumerate(records, 1):
        state.apply(seq, record)
    return state


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=sessions(), data=st.data())
def test_loading_from_any_snapshot_equals_folding_from_the_start(
    tmp_path_factory: pytest.TempPathFactory, records: list[Record], data: st.DataObject
) -> None:
    directory = tmp_path_factory.mktemp("session")
    write_journal(directory, records)
    whole = fold(records).describe()
    assert load_state(directory, warn=pytest.fail).describe() == whole
    at = data.draw(st.integers(0, len(records)), label="snapshot seq")
    snapshot = fold(records[:at]).snapshot()
    (directory / SNAPSHOT).write_bytes(snapshot.model_dump_json().encode())
    assert load_state(directory, warn=pytest.fail).describe() == whole


@given(records=sessions())
def test_every_record_survives_its_journal_line(records: list[Record]) -> None:
    for seq, record in enumerate(records, 1):
        line = encode(seq, 0, record.kind, record.agent, record.journal_body(), end=True)
        assert RECORD_ADAPTER.validate_json(line.rstrip(b"\n")) == record


def test_every_record_kind_has_a_fold() -> None:
    kinds: Any = Record.__origin__  # type: ignore[attr-defined]
    for kind in kinds.__args__:
        assert kind in _SMALL_FOLDS or kind in CONTEXT_FOLDS, kind


def test_journal_lines_leave_defaults_out() -> None:
    reply = AssistantReplied(
        agent="main", message=AssistantMessage(tool_calls=(ToolCall(id="c", name="t"),))
    )
    body = reply.journal_body()
    assert body == {"message": {"tool_calls": [{"id": "c", "name": "t"}]}}
    assert orjson.loads(orjson.dumps(body)) == body
