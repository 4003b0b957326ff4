"""SIGKILL a session whose main agent works a todo list and is auto-continued, resume it,
and check that the todo list and the continuation count come back exactly (issue 11).

The script plans five items, stops early four times (each stop is an auto-continuation:
the note is journaled with the assessment), and finishes. A run killed at seeded random
points and resumed until it completes must end with the very list, the very assessment
history and the very continuation count of an uninterrupted run; after each kill, the
journal's list and count never go back.

Every `pytest` makes 8 kills, `pytest -m slow` 30; `CRASH_TODO_POINTS` sets the number of
kills, `CRASH_SEED` the seed.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator import Assessed, SessionState, load_state
from orchestrator.session.replay import JOURNAL, decode_records
from orchestrator.store import scan_journal
from tests.crash.harness import CrashRun, sized
from tests.scenes import call


def todo_script() -> dict[str, Any]:
    items = [
        {"content": "one"},
        {"content": "two", "blocked_by": ["1"]},
        {"content": "three", "blocked_by": ["1"]},
        {"content": "four", "blocked_by": ["2", "3"]},
    ]
    main = [
        {"text": "Planning.", "tool_calls": [call("todo_write", goal="four things", todos=items)]},
        {"tool_calls": [call("todo_update", id="1", status="in_progress"), call("list_files")]},
        {"text": "Working on one."},  # stops early: continuation 1
        {"tool_calls": [call("todo_update", id="1", status="completed", result="done")]},
        {"text": "One is done."},  # continuation 2
        {
            "tool_calls": [
                call("todo_update", id="2", status="completed"),
                call("todo_update", id="3", status="completed"),
            ]
        },
        {"text": "Two and three are done."},  # continuation 3
        {"tool_calls": [call("todo_create", content="five", blocked_by=["4"])]},
        {"tool_calls": [call("todo_update", id="4", status="completed")]},
        {"text": "Four is done."},  # continuation 4: five remains
        {"tool_calls": [call("todo_update", id="5", status="completed")]},
        {"text": "All five are done."},
    ]
    return {"version": 1, "agents": {"main": main}}


def todos_of(state: SessionState) -> list[tuple[str, str, str, tuple[str, ...], str]]:
    todos = state.todo_list("main")
    return [(i.id, i.content, i.status, i.blocked_by, i.result) for i in todos.items.values()]


def history_of(directory: Path) -> list[tuple[str, tuple[str, ...]]]:
    """The main agent's verdicts, as the journal holds them (`sessions show` reads them)."""
    scan = scan_journal(directory / JOURNAL)
    records = decode_records(scan.path, scan.lines, 1)
    return [
        (r.action, r.reasons) for _, r in records if isinstance(r, Assessed) and r.agent == "main"
    ]


@pytest.mark.parametrize("points", sized("CRASH_TODO_POINTS", 8, 30))
def test_todos_and_continuations_survive_sigkill(tmp_path: Path, points: int) -> None:
    rng = random.Random(int(os.environ.get("CRASH_SEED", "20261123")))
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(todo_script()))

    reference = CrashRun(tmp_path / "ref-sessions", script, tmp_path / "ref-ws", rng)
    reference.workspace.mkdir()
    assert reference.step(kill_after_events=None) == 0
    expected = load_state(reference.sessions / reference.session_id, warn=lambda _: None)
    assert [status for _, _, status, *_ in todos_of(expected)] == ["completed"] * 5
    assert expected.progress_of("main").continues == 4
    expected_history = history_of(reference.sessions / reference.session_id)
    assert [a for a, _ in expected_history] == ["continue_from_context"] * 4 + ["completed"]

    kills = sessions = 0
    while kills < points:
        sessions += 1
        run = CrashRun(tmp_path / f"sessions-{sessions}", script, tmp_path / f"ws-{sessions}", rng)
        run.workspace.mkdir()
        seen_items, seen_continues, seen_history = 0, 0, 0
        while True:
            if run.step(kill_after_events=rng.randint(1, 60)) is not None:
                break
            kills += 1
            run.check_invariants()
            state = load_state(run.sessions / run.session_id, warn=lambda _: None)
            # What the journal held is never lost: the list, the count and the history
            # only grow, and always as a prefix of the uninterrupted run's.
            progress = state.progress_of("main")
            assert len(todos_of(state)) >= seen_items
            assert progress.continues >= seen_continues
            history = history_of(run.sessions / run.session_id)
            assert history == expected_history[: len(history)]
            assert len(history) >= seen_history
            seen_items = len(todos_of(state))
            seen_continues = progress.continues
            seen_history = len(history)
        final = load_state(run.sessions / run.session_id, warn=lambda _: None)
        assert final.status == "completed"
        assert todos_of(final) == todos_of(expected)
        assert final.todo_list("main").goal == "four things"
        assert final.progress_of("main").continues == 4
        assert history_of(run.sessions / run.session_id) == expected_history
        # Each scripted reply was used once: as many model calls as the script has.
        assert final.agents["main"].steps == len(todo_script()["agents"]["main"])
    print(f"{kills} kills in {sessions} sessions")
