"""The fold: one state, however it is reached (from the start, or from any snapshot)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator import (
    AgentStarted,
    Assessed,
    AssistantMessage,
    AssistantReplied,
    BlockedReported,
    MessageAdded,
    MessagePosted,
    MessagesDelivered,
    Plan,
    PlanDecided,
    PlanSubmitted,
    PlanTask,
    SessionState,
    SessionStatusChanged,
    SystemMessage,
    TaskChanged,
    TaskCreated,
    TodoItem,
    TodosChanged,
    ToolCall,
    TurnEnded,
    TurnStarted,
    Usage,
    UserMessage,
    Verified,
    load_state,
)
from orchestrator.errors import JournalCorrupt
from orchestrator.session.live import JOURNAL, SNAPSHOT
from orchestrator.state import Record, Snapshot, decode_record
from orchestrator.state.context import CONTEXT_FOLDS
from orchestrator.state.events import CallResult, EffectStarted
from orchestrator.state.mailbox import MailHistory
from orchestrator.state.small import SMALL_FOLDS
from orchestrator.state.tasks import LIVE, SETTLED
from orchestrator.store._line import encode

STATUSES = ["pending", "in_progress", "completed", "failed"]

texts = st.text(max_size=20)


@dataclass
class Drawn:
    """What a drawn journal holds, as the strategy made it (to check the fold against)."""

    records: list[Record] = field(default_factory=list)
    open_refs: dict[str, list[str]] = field(default_factory=dict)
    tasks: list[str] = field(default_factory=list)
    posted: list[str] = field(default_factory=list)
    undelivered: dict[str, list[str]] = field(default_factory=dict)  # recipient -> ids
    plan_versions: int = 0
    plan_pending: bool = False


@st.composite
def sessions(draw: st.DrawFn) -> list[Record]:
    return draw(journals()).records


@st.composite
def journals(draw: st.DrawFn) -> Drawn:  # noqa: C901
    """A plausible journal: agents start, talk, call tools (some with side effects), get
    results in any order, open and close turns; provider call ids may repeat. Agents
    delegate tasks, which change state, and post mail (some by a call still open, some
    asking an answer, some answering), delivered at a turn or by a call's result."""
    drawn = Drawn()
    records, open_refs = drawn.records, drawn.open_refs
    for _ in range(draw(st.integers(1, 60))):
        agents = sorted(open_refs)
        choices = ["agent"]
        if agents:
            choices += ["message", "reply", "turn_start", "turn_end", "status", "task", "post"]
            choices += ["todos", "assessed", "verified", "blocked"]
            choices += ["plan_decided" if drawn.plan_pending else "plan_submitted"]
        if drawn.tasks:
            choices += ["task_change"]
        if any(open_refs.values()):
            choices += ["effect", "result"]
        if any(ids and not open_refs[to] for to, ids in drawn.undelivered.items()):
            choices += ["deliver"]
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
                    delivers = draw_delivery(draw, drawn, agent) if draw(st.booleans()) else ()
                    records.append(
                        CallResult(
                            agent=agent,
                            ref=ref,
                            status=status,
                            content=draw(texts),
                            delivers=delivers,
                        )
                    )
            case "todos" | "assessed" | "verified" | "blocked":
                records.append(_progress_record(draw, op, agent, seq, bool(open_refs[agent])))
            case "task":
                task = f"t{len(drawn.tasks) + 1}"
                drawn.tasks.append(task)
                records.append(
                    TaskCreated(
                        agent=agent,
                        task=task,
                        agent_type="worker",
                        description=draw(texts),
                        plan_ref=draw(st.sampled_from(["", "P1", "P2"])),
                        ref=draw(st.sampled_from(["", *open_refs[agent]])),
                    )
                )
            case "task_change":
                state = draw(st.sampled_from(sorted(LIVE | SETTLED)))
                records.append(
                    TaskChanged(
                        agent=agent or "main",
                        task=draw(st.sampled_from(drawn.tasks)),
                        state=state,
                        reason=draw(texts),
                        instance=draw(st.sampled_from(["", "x.1"])),
                    )
                )
            case "post":
                # The team numbers mail in order; two posts may reach the journal swapped.
                number = len(drawn.posted) + 1
                while f"m{number}" in drawn.posted:
                    number += 1
                unused = [f"m{number}"]
                if f"m{number + 1}" not in drawn.posted:
                    unused.append(f"m{number + 1}")
                message_id = draw(st.sampled_from(unused))
                to = draw(st.sampled_from(agents))
                drawn.posted.append(message_id)
                drawn.undelivered.setdefault(to, []).append(message_id)
                records.append(
                    MessagePosted(
                        agent=agent,
                        id=message_id,
                        to=to,
                        task=draw(st.sampled_from(["", *drawn.tasks])),
                        mail=draw(st.sampled_from(["progress", "completed", "blocked", "answer"])),
                        priority=draw(st.sampled_from(["notify", "urgent", "interrupt"])),
                        summary=draw(texts),
                        data=draw(st.none() | st.just({"percent": 5})),
                        requires_ack=draw(st.booleans()),
                        in_reply_to=draw(st.sampled_from(["", "m404", *drawn.posted[:-1]])),
                        ref=draw(st.sampled_from(["", *open_refs[agent]])),
                    )
                )
            case "plan_submitted":
                drawn.plan_versions += 1
                drawn.plan_pending = True
                task = PlanTask(id=draw(st.sampled_from(["a", "b"])), title="t", acceptance="true")
                records.append(
                    PlanSubmitted(
                        agent=agent,
                        version=drawn.plan_versions,
                        plan=Plan(goal="g", tasks=(task,)),
                        source=draw(st.sampled_from(["planner", "file", "edit"])),
                        warnings=draw(st.lists(texts, max_size=1).map(tuple)),
                    )
                )
            case "plan_decided":
                drawn.plan_pending = False
                records.append(
                    PlanDecided(
                        agent=agent,
                        version=drawn.plan_versions,
                        decision=draw(st.sampled_from(["approved", "rejected"])),
                        feedback=draw(texts),
                    )
                )
            case "deliver":
                ready = [to for to, ids in drawn.undelivered.items() if ids and not open_refs[to]]
                to = draw(st.sampled_from(sorted(ready)))
                ids = draw_delivery(draw, drawn, to)
                records.append(MessagesDelivered(agent=to, ids=ids, content=draw(texts)))
    return drawn


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


def draw_delivery(draw: st.DrawFn, drawn: Drawn, agent: str) -> tuple[str, ...]:
    """Some of `agent`'s undelivered mail, oldest first (none if it has none)."""
    waiting = drawn.undelivered.get(agent, [])
    count = draw(st.integers(1 if waiting else 0, len(waiting)))
    ids, drawn.undelivered[agent] = waiting[:count], waiting[count:]
    return tuple(ids)


def write_journal(directory: Path, records: list[Record]) -> None:
    lines = [
        encode(seq, 1000 * seq, r.kind, r.agent, r.journal_body(), end=True)
        for seq, r in enumerate(records, 1)
    ]
    (directory / JOURNAL).write_bytes(b"".join(lines))


def journal_mark(directory: Path, seq: int) -> tuple[int, int, int]:
    """The journal's mark after record `seq`, as its writer would have kept it."""
    prefix = b"".join((directory / JOURNAL).read_bytes().splitlines(keepends=True)[:seq])
    return (seq, len(prefix), zlib.crc32(prefix))


def test_a_record_that_does_not_fit_inside_the_marked_prefix_is_named(tmp_path: Path) -> None:
    records: list[Record] = [
        AgentStarted(agent="main", role="main", messages=(UserMessage(content="go"),)),
        TurnStarted(agent="main"),
        TurnEnded(agent="main", reason="completed", rounds=0),
    ]
    write_journal(tmp_path, records)
    lines = (tmp_path / JOURNAL).read_bytes().splitlines(keepends=True)
    lines[1] = encode(2, 0, "turn_ended", "main", {"reason": "tea break", "rounds": 1}, end=True)
    (tmp_path / JOURNAL).write_bytes(b"".join(lines))
    state = fold(records)
    (tmp_path / SNAPSHOT).write_bytes(state.snapshot_json(journal_mark(tmp_path, 3)))
    with pytest.raises(JournalCorrupt, match="record seq 2 does not match its schema") as caught:
        load_state(tmp_path, warn=pytest.fail)
    assert caught.value.seq == 2


def fold(records: list[Record]) -> SessionState:
    state = SessionState()
    for seq, record in enumerate(records, 1):
        state.apply(seq, record)
    return state


def queries(state: SessionState) -> dict[str, Any]:
    """What the runtime asks the fold, beyond what `describe` shows."""
    box = state.mailbox
    agents = sorted({m.recipient for m in box.messages.values()} | set(state.agents))
    return {
        "live": [t.task_id for t in state.tasks.live()],
        "plan": {p: state.tasks.by_plan_ref(p) for p in ("P1", "P2")},
        "children": {a: [t.task_id for t in state.tasks.children(a)] for a in agents},
        "undelivered": {a: [m.message_id for m in box.undelivered(a)] for a in agents},
        "unanswered": {a: [m.message_id for m in box.unanswered(a)] for a in agents},
        "posted": box.posted_count,
        "snapshot": state.snapshot(),
    }


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=journals(), data=st.data())
def test_loading_from_any_snapshot_equals_folding_from_the_start(
    tmp_path_factory: pytest.TempPathFactory, drawn: Drawn, data: st.DataObject
) -> None:
    records = drawn.records
    directory = tmp_path_factory.mktemp("session")
    write_journal(directory, records)
    folded = fold(records)
    whole = folded.describe()
    assert load_state(directory, warn=pytest.fail).describe() == whole
    at = data.draw(st.integers(0, len(records)), label="snapshot seq")
    partial = fold(records[:at])
    # With the journal's mark, the load decodes the records up to it in one call and
    # checks them by one CRC; without, line by line. Either way the state is the same.
    mark = journal_mark(directory, at) if data.draw(st.booleans(), label="marked") else None
    if data.draw(st.booleans(), label="as written live"):
        partial.snapshot_json()  # a snapshot written live, then more records folded
        for seq, record in enumerate(records[at:], at + 1):
            partial.apply(seq, record)
        assert partial.describe() == whole
        partial = fold(records[:at])
        written = partial.snapshot_json(mark)
    else:
        written = msgspec.json.encode(partial.snapshot(journal=mark))
    assert msgspec.json.decode(written, type=Snapshot) == partial.snapshot(journal=mark)
    (directory / SNAPSHOT).write_bytes(written)
    loaded = load_state(directory, warn=pytest.fail)
    assert loaded.describe() == whole
    assert queries(loaded) == queries(folded)


@settings(max_examples=200)
@given(drawn=journals())
def test_the_live_mailbox_keeps_only_mail_that_needs_something(drawn: Drawn) -> None:
    state = fold(drawn.records)
    history = MailHistory()
    for seq, record in enumerate(drawn.records, 1):
        history.apply(seq, record)
    assert list(history.messages) == drawn.posted
    results = {(r.agent, r.ref) for r in drawn.records if isinstance(r, CallResult)}
    open_calls = {(m.sender, m.ref) for m in history.messages.values()} - results
    needing = [
        m.message_id
        for m in history.messages.values()
        if m.delivered_seq is None
        or (m.requires_ack and not m.answered_by)
        or (m.ref and (m.sender, m.ref) in open_calls)
    ]
    kept = list(state.mailbox.messages)
    # A message whose call posted another one after it is no longer found by that call.
    assert set(kept) <= set(needing)
    assert {i for i in needing if history.messages[i].delivered_seq is None} <= set(kept)
    for message_id in kept:
        assert state.mailbox.messages[message_id] == history.messages[message_id]
    assert state.mailbox.posted_count == len(drawn.posted)


@given(records=sessions())
def test_every_record_survives_its_journal_line(records: list[Record]) -> None:
    for seq, record in enumerate(records, 1):
        line = encode(seq, 0, record.kind, record.agent, record.journal_body(), end=True)
        assert decode_record(line.rstrip(b"\n")) == record


def test_every_record_kind_has_a_fold() -> None:
    for kind in Record.__args__:
        assert kind in SMALL_FOLDS or kind in CONTEXT_FOLDS, kind


def test_journal_lines_leave_defaults_out() -> None:
    reply = AssistantReplied(
        agent="main", message=AssistantMessage(tool_calls=(ToolCall(id="c", name="t"),))
    )
    body = orjson.loads(orjson.dumps(reply.journal_body()))
    assert body == {"message": {"tool_calls": [{"id": "c", "name": "t"}]}}
