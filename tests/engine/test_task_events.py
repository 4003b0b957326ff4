"""What a session shows of its task on a worker (`TaskEvents`): the task's records, as
the follower reads them, told as the events a local task emits; none of those read when
the session took the task up (a resumed session's catch-up), and nothing the session
journals itself (the task's messages, its states)."""

from __future__ import annotations

from orchestrator import (
    AssistantMessage,
    AssistantReplied,
    MessagePosted,
    TaskChanged,
    TextStreamed,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolResult,
    TurnEnded,
    TurnStarted,
    Usage,
)
from orchestrator.engine.handover import TaskEvents
from orchestrator.state import Record
from orchestrator.state.events import CallResult, EffectStarted

SHELL = ToolCall(id="c1", name="shell", arguments='{"command": "make"}')
COMPLETE = ToolCall(id="c2", name="complete", arguments='{"summary": "built"}')
USED = Usage(input_tokens=10, output_tokens=2)
SHELL_REPLY = AssistantMessage(text="building", tool_calls=(SHELL,), usage=USED)
COMPLETE_REPLY = AssistantMessage(tool_calls=(COMPLETE,), usage=USED)

JOURNAL: list[Record] = [
    TurnStarted(agent="t1"),  # 1
    AssistantReplied(agent="t1", message=SHELL_REPLY, model="m"),  # 2
    EffectStarted(agent="t1", ref="2.0"),  # 3: its shell call runs (not idempotent)
    CallResult(agent="t1", ref="2.0", content="built"),  # 4
    AssistantReplied(agent="t1", message=COMPLETE_REPLY, model="m"),  # 5
    MessagePosted(
        agent="t1", id="t1.m1", to="main", task="t1", mail="completed", summary="built"
    ),  # 6
    TaskChanged(agent="t1", task="t1", state="completed"),  # 7
    CallResult(agent="t1", ref="5.0", content="handed over"),  # 8
    TurnEnded(agent="t1", reason="yielded", rounds=2),  # 9
]
ROWS = list(enumerate(JOURNAL, 1))  # (seq, record), as the follower folds them

SHELL_FINISHED = ToolCallFinished(
    agent="t1", ref="2.0", result=ToolResult(call_id="c1", name="shell", content="built")
)
AFTER_THE_SHELL = [
    AssistantReplied(agent="t1", message=COMPLETE_REPLY, model="m"),
    ToolCallStarted(agent="t1", ref="5.0", call=COMPLETE, read_only=False, idempotent=True),
    ToolCallFinished(
        agent="t1",
        ref="5.0",
        result=ToolResult(call_id="c2", name="complete", content="handed over"),
    ),
    TurnEnded(agent="t1", reason="yielded", rounds=2),
]


def test_a_new_task_s_work_is_told_as_it_is_read() -> None:
    """A task started by this session: its journal held nothing of its work (its first
    rows, read before it ran, are none), so everything it does is shown, in order."""
    shown = TaskEvents()
    assert shown.of([]) == []
    assert shown.of(ROWS[:3]) == [
        TurnStarted(agent="t1"),
        TextStreamed(agent="t1", text="building"),
        AssistantReplied(agent="t1", message=SHELL_REPLY, model="m"),
        ToolCallStarted(agent="t1", ref="2.0", call=SHELL, read_only=False, idempotent=False),
    ]
    assert shown.of(ROWS[3:]) == [SHELL_FINISHED, *AFTER_THE_SHELL]


def test_a_resumed_session_shows_only_what_its_task_does_from_then_on() -> None:
    """The records a resumed session finds (shown before it stopped, or done while
    nobody watched) are read, not shown: a call they started is shown ending, once."""
    shown = TaskEvents()
    assert shown.of(ROWS[:3]) == []
    assert shown.of(ROWS[3:]) == [SHELL_FINISHED, *AFTER_THE_SHELL]


def test_a_task_that_ended_while_the_session_was_stopped_shows_nothing() -> None:
    assert TaskEvents().of(ROWS) == []
