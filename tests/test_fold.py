"""The fold: one state, however it is reached (from the start, or from any snapshot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
            choices += ["message", "reply", "turn_start", "turn_end", "status"]
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
            case "message":
                records.append(MessageAdded(agent=agent, message=UserMessage(content=draw(texts))))
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
            case "turn_start":
                records.append(TurnStarted(agent=agent))
            case "turn_end":
                records.append(TurnEnded(agent=agent, reason="completed", rounds=1))
            case "status":
                status = draw(st.sampled_from(["running", "completed", "failed"]))
                records.append(SessionStatusChanged(agent=agent, status=status))
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
