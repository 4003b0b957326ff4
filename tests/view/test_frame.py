"""Frames of a small tree, at a fixed clock and width, without colour: the plain frame
and the rich one read the same."""

from __future__ import annotations

import io

from rich.console import Console

from orchestrator import (
    AgentStarted,
    AssistantMessage,
    AssistantReplied,
    Event,
    MessagePosted,
    Price,
    TaskChanged,
    TaskCreated,
    TodoItem,
    TodosChanged,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolResult,
    TurnStarted,
    Usage,
    UsageUpdated,
)
from orchestrator.view import ViewModel, plain_frame, rich_frame
from orchestrator.view.frame import SPINNER

GPT = "gpt-4.1"
PRICES = {GPT: Price(input=2.0, output=8.0)}


def calls(*names: str) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(id=f"c{n}", name=name, arguments="{}") for n, name in enumerate(names))


def replied(agent: str, *names: str, used: int = 1000) -> AssistantReplied:
    message = AssistantMessage(
        tool_calls=calls(*names), usage=Usage(input_tokens=used, output_tokens=used // 10)
    )
    return AssistantReplied(agent=agent, message=message, model=GPT)


def small_tree() -> ViewModel:
    """main delegated t1 (working through its todo list, a model call in flight) and t2
    (asks a question); main waits for them."""
    timed: list[tuple[float, Event]] = [
        (0, AgentStarted(agent="main", role="main", messages=())),
        (0, TurnStarted(agent="main")),
        (3, replied("main", "delegate", "delegate", used=8000)),
        (3, UsageUpdated(agent="main", usage=Usage(), total=Usage(), context=9000, usable=100_000)),
        (4, TaskCreated(agent="main", task="t1", agent_type="worker", description="parser")),
        (4, TaskCreated(agent="main", task="t2", agent_type="explorer", description="read docs")),
        (5, TaskChanged(agent="t1", task="t1", state="running")),
        (5, TaskChanged(agent="t2", task="t2", state="running")),
        (5, TurnStarted(agent="t1")),
        (5, TurnStarted(agent="t2")),
        (9, replied("t2", "ask_decision", used=2000)),
        (
            10,
            MessagePosted(
                agent="t2",
                id="m1",
                to="main",
                task="t2",
                mail="decision_required",
                summary="Which\nversion?",
            ),
        ),
        (10, TaskChanged(agent="t2", task="t2", state="waiting_decision")),
        (12, replied("t1", "todo_write", used=3000)),
        (
            12,
            TodosChanged(
                agent="t1",
                items=(
                    TodoItem(
                        id="1",
                        content="write it",
                        active_form="Writing the parser",
                        status="in_progress",
                    ),
                ),
            ),
        ),
        (
            13,
            ToolCallStarted(
                agent="main",
                ref="3.2",
                call=calls("wait_tasks")[0],
                read_only=True,
                idempotent=True,
            ),
        ),
    ]
    model = ViewModel(prices=PRICES)
    for at, event in timed:
        model.apply(event, at=at)
    model.apply(replied("t1", "write_file"), at=14)
    done = ToolResult(call_id="c0", name="write_file", content="wrote it")
    model.apply(ToolCallFinished(agent="t1", ref="14.0", result=done), at=14)  # it thinks again
    return model


EXPECTED = (
    "◌ main main        waiting      gpt-4.1  9%  8.8k Σ15.4k  $0.0224 Σ$0.0392  1m12s  "
    "wait_tasks {}\n"
    "├─ ⠙ t1 parser     thinking     gpt-4.1             4.4k           $0.0112  1m08s  "
    "Writing the parser\n"
    "└─ ? t2 read docs  needs input  gpt-4.1             2.2k           $0.0056  1m08s  "
    "Which\\nversion?\n"
    "✉ m1 decision_required t2 → main: Which version?\n"
    "1 running · 1 needs input · 1 waiting · 15.4k tokens · $0.0392 · 1m12s\n"
)


def test_the_plain_frame_of_a_small_tree() -> None:
    assert plain_frame(small_tree(), now=72.1, width=110) == EXPECTED


def test_a_frame_that_stays_freezes_no_spinner() -> None:
    # The last frame (a stop, Ctrl+C, the chat's end) stays on the screen: a spinner
    # frozen mid-turn there would say something still turns.
    still = plain_frame(small_tree(), now=72.1, width=110, still=True)
    assert still == EXPECTED.replace("├─ ⠙ t1 parse", "├─ ● t1 parse")
    assert not any(glyph in still for glyph in SPINNER)


def test_the_rich_frame_reads_as_the_plain_one() -> None:
    out = io.StringIO()
    console = Console(file=out, width=110, color_system=None, force_terminal=False)
    console.print(rich_frame(small_tree(), now=72.1))
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    assert "\n".join(lines) + "\n" == EXPECTED


def test_the_activity_is_cut_to_the_width() -> None:
    frame = plain_frame(small_tree(), now=72.1, width=90)
    assert all(len(line) <= 90 for line in frame.splitlines())
    assert "1 running · 1 needs input" in frame
    assert "Writin…" in frame


def test_a_compaction_still_running_as_the_session_ends_leaves_the_frame() -> None:
    """A background summary the team drops at its end has no checkpoint: the session's
    end clears it, so the last frame does not say it is still compacting."""
    from orchestrator import CompactionStarted, SessionStatusChanged

    model = ViewModel()
    model.apply(AgentStarted(agent="main", role="main", messages=()), at=0.0)
    model.apply(CompactionStarted(agent="main", reason="fraction", tokens=2000, usable=0), at=1.0)
    assert "⧉ compacting main: 2.0k tokens" in plain_frame(model, now=1.0)
    model.apply(SessionStatusChanged(agent="main", status="completed"), at=2.0)
    assert "compacting" not in plain_frame(model, now=2.0)
