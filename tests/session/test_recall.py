"""Reading an agent's history back from a session's journal (`recall_text`), and from a
live session whose writer still holds what it folded (`LiveSession.recall`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from orchestrator import (
    AgentStarted,
    Assessed,
    AssistantMessage,
    AssistantReplied,
    Event,
    LiveSession,
    MessageAdded,
    MessagePosted,
    MessagesDelivered,
    ScriptedModel,
    SystemMessage,
    ToolCall,
    ToolCallFinished,
    ToolResult,
    TurnEnded,
    UserMessage,
    create_session,
    open_session,
)
from orchestrator.errors import RecallRefused
from orchestrator.messages import ToolStatus
from orchestrator.models.scripted import parse_script
from orchestrator.session.live import JOURNAL
from orchestrator.session.recall import REF_FORMS, recall_text
from orchestrator.session.replay import decode_records
from orchestrator.store import scan_journal
from orchestrator.store._line import encode
from tests.team.engines import LOCAL
from tests.team.test_drive import RunResult, run

LONG = "".join(f"{n}\n" for n in range(1, 5001))  # 23,893 characters


def started(agent: str, system: str, goal: str) -> AgentStarted:
    messages = (SystemMessage(content=system), UserMessage(content=goal))
    return AgentStarted(
        agent=agent, role="worker" if agent != "main" else "main", messages=messages
    )


def replied(agent: str, text: str, *calls: tuple[str, dict[str, Any]]) -> AssistantReplied:
    tool_calls = tuple(
        ToolCall(id=f"c{index}", name=name, arguments=orjson.dumps(arguments).decode())
        for index, (name, arguments) in enumerate(calls)
    )
    return AssistantReplied(agent=agent, message=AssistantMessage(text=text, tool_calls=tool_calls))


def finished(
    agent: str,
    ref: str,
    name: str,
    content: str,
    status: ToolStatus = "ok",
    changed: tuple[str, ...] = (),
) -> ToolCallFinished:
    result = ToolResult(
        call_id="c" + ref.split(".")[1], name=name, status=status, content=content, changed=changed
    )
    return ToolCallFinished(agent=agent, ref=ref, result=result)


HISTORY: list[Event] = [
    started("main", "You are main.", "Fix the bug."),  # 1
    replied("main", "Looking.", ("read_file", {"path": "a.py"}), ("shell", {"command": "pytest"})),
    finished("main", "2.0", "read_file", "print('a')\n"),  # 3
    finished("main", "2.1", "shell", "1 failed", "error", ("log.txt",)),  # 4
    started("w1", "You are w1.", "Count the lines."),  # 5
    replied("w1", "", ("shell", {"command": "cat secret.txt"})),  # 6
    finished("w1", "6.0", "shell", "the secret of w1"),  # 7
    MessagePosted(agent="w1", id="m-1", to="main", task="", mail="progress", summary="counted"),
    MessagesDelivered(agent="main", ids=("m-1",), content="[progress] w1: counted"),  # 9
    MessageAdded(agent="main", message=UserMessage(content="Also update the docs.")),  # 10
    Assessed(agent="main", action="continue_from_context", note="Go on."),  # 11
    replied("main", "", ("shell", {"command": "seq 1 5000"})),  # 12
    finished("main", "12.0", "shell", LONG),  # 13
    TurnEnded(agent="main", reason="completed", rounds=3),  # 14
    replied("main", "", ("read_file", {"path": "b.py"})),  # 15: never answered
    replied("main", "Waiting.", ("shell", {"command": "sleep 60"})),  # 16: still running
]


async def emit_all(live: LiveSession, events: list[Event]) -> None:
    for event in events:
        await live.emit(event)


async def write_session(root: Path, events: list[Event]) -> Path:
    """A session whose journal holds `events`, record n at seq n, written by a LiveSession."""
    session_id, directory = create_session(root, goal="g", model="m", workspace=None)
    async with open_session(root, session_id, warn=pytest.fail) as live:
        await emit_all(live, events)
        assert live.journal.last_seq == len(events)
    return directory


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return trio.run(write_session, tmp_path / "sessions", HISTORY)


def test_a_call_with_its_result(history: Path) -> None:
    assert recall_text(history, "main", "2.0") == (
        'call 2.0: read_file\narguments: {"path":"a.py"}\nresult (seq 3): ok\nprint(\'a\')\n'
    )
    assert recall_text(history, "main", " 2.1 ") == (
        'call 2.1: shell\narguments: {"command":"pytest"}\nresult (seq 4): error\n'
        "changed: log.txt\n1 failed"
    )


def test_a_reply_with_its_calls_by_ref(history: Path) -> None:
    assert recall_text(history, "main", "2") == (
        "seq 2: your reply\nLooking.\ncalls (recall a call's ref for its result):\n"
        '- 2.0 read_file {"path":"a.py"}\n'
        '- 2.1 shell {"command":"pytest"}'
    )
    assert recall_text(history, "w1", "6") == (
        "seq 6: your reply\n(no text)\ncalls (recall a call's ref for its result):\n"
        '- 6.0 shell {"command":"cat secret.txt"}'
    )


@pytest.mark.parametrize(
    ("agent", "ref", "text"),
    [
        (
            "main",
            "1",
            "seq 1: your context started (role main)\n[system]\nYou are main.\n\n"
            "[user]\nFix the bug.",
        ),
        (
            "w1",
            "5",
            "seq 5: your context started (role worker)\n[system]\nYou are w1.\n\n"
            "[user]\nCount the lines.",
        ),
        ("main", "9", "seq 9: mail delivered to you (m-1)\n[progress] w1: counted"),
        ("main", "10", "seq 10: a message added to your context\n[user]\nAlso update the docs."),
        ("main", "11", "seq 11: a note the session added to your context\nGo on."),
    ],
)
def test_each_kind_of_message(history: Path, agent: str, ref: str, text: str) -> None:
    assert recall_text(history, agent, ref) == text


def test_a_long_text_comes_in_pages(history: Path) -> None:
    whole = recall_text(history, "main", "12.0", limit=100_000)
    head = 'call 12.0: shell\narguments: {"command":"seq 1 5000"}\nresult (seq 13): ok\n'
    assert whole == head + LONG
    first = recall_text(history, "main", "12.0")
    assert first.endswith(
        f"\n[characters 0-20000 of {len(whole)}; {len(whole) - 20000} more: recall ref "
        '"12.0" with offset 20000]'
    )
    assert first.startswith(whole[:20000])
    pages, offset = [], 0
    while True:
        page = recall_text(history, "main", "12.0", offset=offset, limit=7000)
        text, _, trailer = page.rpartition("\n")
        pages.append(text)
        if trailer.endswith(": the end]"):
            assert trailer == f"[characters {offset}-{len(whole)} of {len(whole)}: the end]"
            break
        offset = int(trailer.rpartition("with offset ")[2].rstrip("]"))
    assert "".join(pages) == whole
    assert len(pages) == -(-len(whole) // 7000)


@pytest.mark.parametrize(
    ("agent", "ref", "message"),
    [
        ("main", "abc", f'malformed ref "abc": a ref is {REF_FORMS}'),
        ("main", "0", f'malformed ref "0": a ref is {REF_FORMS}'),
        ("main", "2.01", f'malformed ref "2.01": a ref is {REF_FORMS}'),
        ("main", "2.", f'malformed ref "2.": a ref is {REF_FORMS}'),
        ("main", "99", 'ref "99" is beyond the journal, which ends at seq 16'),
        ("main", "99.0", 'ref "99.0" is beyond the journal, which ends at seq 16'),
        # Another agent's records: refused, and nothing of what they hold is said.
        ("main", "6", 'ref "6" is not in your history'),
        ("main", "6.0", 'ref "6.0" is not in your history'),
        ("main", "7", 'ref "7" is not in your history'),
        ("main", "8", 'ref "8" is not in your history'),
        ("w1", "2.0", 'ref "2.0" is not in your history'),
        (
            "main",
            "14",
            "seq 14 is a turn_ended record, not a message of your context: a seq names a "
            "reply of yours, a message added to your context, a mail delivery or your "
            "context's start",
        ),
        (
            "main",
            "3",
            'seq 3 is a record of call 2.0, not a message: recall "2.0" for the call and '
            "its result",
        ),
        (
            "main",
            "10.0",
            'seq 10 is not a reply of yours, so it made no calls: ref "10.0" names nothing '
            '(recall "10" for the record itself)',
        ),
        ("main", "2.2", 'reply 2 made 2 calls, 2.0 to 2.1: it has no call "2.2"'),
        ("main", "12.1", 'reply 12 made 1 call, 12.0 to 12.0: it has no call "12.1"'),
        (
            "main",
            "15.0",
            "call 15.0 (read_file) has no result: you went on without it, so its result "
            "was never recorded",
        ),
        (
            "main",
            "16.0",
            "call 16.0 (shell) has no result: it is still running (or the session stopped "
            "while it ran)",
        ),
    ],
)
def test_refusals_say_why(history: Path, agent: str, ref: str, message: str) -> None:
    with pytest.raises(RecallRefused) as caught:
        recall_text(history, agent, ref)
    assert str(caught.value) == message


def test_an_offset_past_the_end_is_refused(history: Path) -> None:
    size = len(recall_text(history, "main", "10"))
    assert recall_text(history, "main", "10", offset=size) == (
        f"\n[characters {size}-{size} of {size}: the end]"
    )
    with pytest.raises(RecallRefused, match=f'offset {size + 1} is past the end of ref "10", '):
        recall_text(history, "main", "10", offset=size + 1)


def test_a_session_without_records(tmp_path: Path) -> None:
    _, directory = create_session(tmp_path, goal="g", model="m", workspace=None)
    with pytest.raises(RecallRefused, match='ref "1" is beyond the journal, which ends at seq 0'):
        recall_text(directory, "main", "1")


@pytest.mark.parametrize("cut", ["torn line", "unfinished batch"])
def test_a_torn_tail_is_not_there(history: Path, cut: str) -> None:
    """Records of a batch whose end is not in the file (a crash's, or one being written
    this instant) are not read, as a scan would not keep them."""
    body = {"message": {"role": "user", "content": "half"}}
    more = encode(17, 0, "message_added", "main", body, end=False)
    end = encode(18, 0, "message_added", "main", body, end=True)
    tail = more + end[:-20] if cut == "torn line" else more
    with (history / JOURNAL).open("ab") as journal:
        journal.write(tail)
    assert "Waiting." in recall_text(history, "main", "16")
    with pytest.raises(RecallRefused, match="ends at seq 16"):
        recall_text(history, "main", "17")


async def test_every_record_is_found_however_long_the_lines(tmp_path: Path) -> None:
    """Bisection over lines of very different lengths finds each seq."""
    events: list[Event] = [started("main", "s", "g")]
    for n in range(2, 200):
        events.append(MessageAdded(agent="main", message=UserMessage(content="x" * (n * n % 977))))
    directory = await write_session(tmp_path / "sessions", events)
    for seq in range(2, 200):
        text = recall_text(directory, "main", str(seq))
        assert text == f"seq {seq}: a message added to your context\n[user]\n" + "x" * (
            seq * seq % 977
        )


async def test_a_live_session_recalls_what_it_has_not_written_yet(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="g", model="m", workspace=None)
    async with open_session(root, session_id, warn=pytest.fail) as live:
        await emit_all(live, HISTORY[:3])
        # `emit` queues and folds without yielding: the writer has not run yet.
        assert live.journal.durable_seq < live.journal.last_seq == 3
        with pytest.raises(RecallRefused, match="beyond the journal"):
            recall_text(directory, "main", "2.0")  # the file alone does not have it
        assert (await live.recall("main", "2.0")).endswith("result (seq 3): ok\nprint('a')\n")
        await live.emit(MessageAdded(agent="main", message=UserMessage(content="just now")))
        assert await live.recall("main", "4", 0, 12) == (
            'seq 4: a mes\n[characters 0-12 of 54; 42 more: recall ref "4" with offset 12]'
        )


SCRIPT: dict[str, Any] = {
    "agents": {
        "main": [
            {
                "text": "Reading first.",
                "tool_calls": [
                    {"name": "read_file", "arguments": {"path": "notes.txt"}},
                    {"name": "shell", "arguments": {"command": "echo hello"}},
                ],
            },
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}}]},
            {"text": "done"},
        ]
    }
}


async def test_a_scripted_run_is_recalled_as_it_was_folded(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(SCRIPT))
    root = tmp_path / "sessions"
    session_id, directory = create_session(
        root, goal="g", model=f"scripted:{script}", workspace=None
    )
    (directory / "workspace" / "notes.txt").write_text("remember the milk\n")
    assert await run(root, session_id, ScriptedModel(parse_script(SCRIPT)), LOCAL) == RunResult(
        "completed"
    )
    scan = scan_journal(directory / JOURNAL)
    replies = [
        seq
        for seq, record in decode_records(scan.path, scan.lines, 1)
        if isinstance(record, AssistantReplied)
    ]
    first, second, _ = replies
    assert recall_text(directory, "main", f"{first}.0").endswith(
        f"result (seq {first + 1}): ok\nremember the milk\n"
    )
    shell = recall_text(directory, "main", f"{first}.1")
    assert shell.startswith(f'call {first}.1: shell\narguments: {{"command":"echo hello"}}\n')
    assert "\nhello\n" in shell
    missing = recall_text(directory, "main", f"{second}.0")
    assert f"result (seq {second + 1}): error\nmissing.txt: no such file" in missing
    assert recall_text(directory, "main", str(first)).startswith(
        f"seq {first}: your reply\nReading first.\n"
    )
