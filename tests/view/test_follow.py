"""Following a journal as another writer appends to it, and replaying one at a speed
(view/follow.py): records appended after the follower started are yielded, a torn line
and an open batch are waited for, the session's end ends it, and so does a session left
running whose process is gone; corruption is the store's `JournalCorrupt`. The replay's
waits under trio's autojump clock. The journal is written line by line here, as the
writer frames it, so each step of a write can be seen."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
from contextlib import aclosing
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio
import trio.testing

from orchestrator import (
    AssistantMessage,
    AssistantReplied,
    SessionStatusChanged,
    TextStreamed,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    TurnStarted,
)
from orchestrator.errors import JournalCorrupt
from orchestrator.layout import JOURNAL, LOCK
from orchestrator.state.events import CallResult, EffectStarted
from orchestrator.store import SessionLock, scan_journal
from orchestrator.store._line import encode
from orchestrator.view import JournalEntry, Pace, RecordEvents, follow_journal

T0 = 1_700_000_000_000  # ms


def line(seq: int, kind: str, body: dict[str, Any] | None = None, *, end: bool = True) -> bytes:
    return encode(seq, T0 + seq * 1000, kind, "main", body or {}, end=end)


def status(seq: int, value: str) -> bytes:
    return line(seq, "session_status", {"status": value})


def append(directory: Path, data: bytes) -> None:
    with open(directory / JOURNAL, "ab") as file:
        file.write(data)


async def next_or_none(receive: trio.MemoryReceiveChannel[JournalEntry]) -> JournalEntry | None:
    """The next entry, or None when none comes within a minute (of trio's clock)."""
    with trio.move_on_after(60):
        return await receive.receive()
    return None


async def test_records_appended_after_it_started_come_as_they_are_written(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    append(tmp_path, status(1, "running"))
    send, receive = trio.open_memory_channel[JournalEntry](math.inf)
    ended = trio.Event()

    async def follow() -> None:
        async with send, aclosing(follow_journal(tmp_path)) as entries:
            async for entry in entries:
                await send.send(entry)
        ended.set()

    with SessionLock(tmp_path / LOCK):  # held, as a running session's is
        async with trio.open_nursery() as nursery:
            nursery.start_soon(follow)
            first = await next_or_none(receive)
            assert first == JournalEntry(1, (T0 + 1000) / 1000, SessionStatusChanged(
                agent="main", status="running"))  # fmt: skip

            append(tmp_path, line(2, "turn_started"))
            second = await next_or_none(receive)
            assert second is not None
            assert (second.seq, second.record) == (2, TurnStarted(agent="main"))

            torn = line(3, "turn_started")
            append(tmp_path, torn[:20])  # the writer is mid-line
            assert await next_or_none(receive) is None
            append(tmp_path, torn[20:])
            third = await next_or_none(receive)
            assert third is not None
            assert third.seq == 3

            append(tmp_path, line(4, "turn_started", end=False))  # a batch, not yet ended
            assert await next_or_none(receive) is None
            append(tmp_path, line(5, "turn_started"))
            both = [await next_or_none(receive), await next_or_none(receive)]
            assert [e.seq for e in both if e is not None] == [4, 5]

            assert not ended.is_set()
            append(tmp_path, status(6, "completed"))
            last = await next_or_none(receive)
            assert last is not None
            assert last.record == SessionStatusChanged(agent="main", status="completed")
            await ended.wait()  # the session ended, and so did the follower


async def entries_of(directory: Path) -> list[JournalEntry]:
    with trio.fail_after(60):
        async with aclosing(follow_journal(directory)) as entries:
            return [entry async for entry in entries]


async def test_a_finished_session_is_read_to_its_end_even_when_resumed_in_between(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    statuses = ["running", "interrupted", "running", "completed"]
    append(tmp_path, b"".join(status(seq, s) for seq, s in enumerate(statuses, 1)))
    found = await entries_of(tmp_path)
    assert [e.record.status for e in found if isinstance(e.record, SessionStatusChanged)] == (
        statuses
    )


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()  # reaped: its pid names no process
    return process.pid


@pytest.mark.parametrize("lock", ["missing", "empty", "dead"])
async def test_a_session_left_running_whose_process_is_gone_is_read_to_its_end(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, lock: str
) -> None:
    if lock == "empty":
        (tmp_path / LOCK).write_bytes(b"")
    elif lock == "dead":
        holder = {"pid": dead_pid(), "host": socket.gethostname(), "since": "2026-01-01T00:00:00"}
        (tmp_path / LOCK).write_bytes(orjson.dumps(holder))
    torn = line(3, "turn_started")[:30]  # what the killed writer left mid-line
    append(tmp_path, status(1, "running") + line(2, "turn_started") + torn)
    found = await entries_of(tmp_path)
    assert [e.seq for e in found] == [1, 2]
    assert (tmp_path / JOURNAL).read_bytes().endswith(torn)  # nothing cut: it only reads


async def test_an_ended_session_with_a_torn_line_after_its_end_and_no_process_ends(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    torn = status(3, "running")[:25]  # a resume killed as it wrote its first record
    append(tmp_path, status(1, "running") + status(2, "interrupted") + torn)
    assert [e.seq for e in await entries_of(tmp_path)] == [1, 2]


async def test_a_corrupt_line_is_the_error_the_other_commands_give(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    bad = line(2, "turn_started").replace(b"turn_started", b"turn_startes")
    append(tmp_path, status(1, "running") + bad + status(3, "completed"))
    with pytest.raises(JournalCorrupt) as followed:
        await entries_of(tmp_path)
    with pytest.raises(JournalCorrupt) as scanned:
        scan_journal(tmp_path / JOURNAL)
    assert str(followed.value) == str(scanned.value)
    assert "line 2 (seq 2) fails its checksum" in str(followed.value)


async def test_a_record_that_does_not_fit_its_kind_is_named_by_seq(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    append(tmp_path, status(1, "running") + line(2, "session_status", {"status": "dancing"}))
    with pytest.raises(JournalCorrupt, match="seq 2"):
        await entries_of(tmp_path)


async def test_a_journal_cut_back_while_followed_is_an_error(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    append(tmp_path, status(1, "running") + line(2, "turn_started"))
    with SessionLock(tmp_path / LOCK):
        async with aclosing(follow_journal(tmp_path)) as entries:
            assert (await anext(entries)).seq == 1
            assert (await anext(entries)).seq == 2
            os.truncate(tmp_path / JOURNAL, 10)
            with pytest.raises(JournalCorrupt, match="shorter than"):
                await anext(entries)


async def test_a_replay_at_ten_times_waits_a_tenth_of_each_gap_and_at_most_two_seconds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    written = [1000.0, 1005.0, 1010.0, 1010.0, 1010.0 + 8 * 3600, 1012.0 + 8 * 3600]
    pace = Pace(10)
    start = trio.current_time()
    reached = []
    for at in written:
        await pace.until(at)
        reached.append(round(trio.current_time() - start, 6))
        assert pace.now() == pytest.approx(at)
    assert reached == [0.0, 0.5, 1.0, 1.0, 3.0, 3.2]  # the night: two seconds
    await trio.sleep(1)
    assert pace.now() == pytest.approx(written[-1] + 10)  # the replay's time runs at 10x


async def test_a_replay_at_speed_zero_never_waits(autojump_clock: trio.testing.MockClock) -> None:
    pace = Pace(0)
    start = trio.current_time()
    for at in (1000.0, 1005.0, 5000.0):
        await pace.until(at)
    assert trio.current_time() == start
    await trio.sleep(3)
    assert pace.now() == pytest.approx(5003.0)  # followed live, time runs as it does


def test_records_are_told_again_as_the_events_a_run_showed() -> None:
    calls = (
        ToolCall(id="c0", name="read_file", arguments='{"path": "a"}'),
        ToolCall(id="c1", name="shell", arguments='{"command": "make"}'),
    )
    reply = AssistantReplied(agent="main", message=AssistantMessage(text="Go.", tool_calls=calls))
    told = RecordEvents()
    events = [
        *told.of(5, reply),
        *told.of(6, EffectStarted(agent="main", ref="5.1")),
        *told.of(7, CallResult(agent="main", ref="5.0", content="text of a")),
        *told.of(8, CallResult(agent="main", ref="5.1", status="error", content="exit 2")),
    ]
    kinds = [(seq, type(event).__name__) for seq, event in events]
    assert kinds == [
        (None, "TextStreamed"),
        (5, "AssistantReplied"),
        (6, "ToolCallStarted"),  # a start on disk: when it was
        (None, "ToolCallStarted"),  # none: just before its result
        (7, "ToolCallFinished"),
        (8, "ToolCallFinished"),
    ]
    assert events[0][1] == TextStreamed(agent="main", text="Go.")
    started = events[2][1]
    assert isinstance(started, ToolCallStarted)
    assert started.call == calls[1]
    assert not started.idempotent
    finished = events[5][1]
    assert isinstance(finished, ToolCallFinished)
    result = finished.result
    assert (result.call_id, result.name, result.status, result.content) == (
        "c1",
        "shell",
        "error",
        "exit 2",
    )
    assert finished.ref == "5.1"
