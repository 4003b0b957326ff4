"""A task on a worker runs in a team of its own, and its shell command's changes are found
by comparing the shared workspace before and after it: the other tasks of its session
(wherever they run) are read from their journals in the engine's database, so that it
takes neither a change in another task's write scope nor a file another task changed
meanwhile for its own (engine/other_tasks.py, team/writes.py). Here on a real `Store`,
a SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

pytest.importorskip("dbos")

from orchestrator import (
    AgentStarted,
    AssistantMessage,
    AssistantReplied,
    SystemMessage,
    TaskCreated,
    ToolCall,
)
from orchestrator.engine import sqlite_url
from orchestrator.engine.other_tasks import SessionTasks
from orchestrator.engine.retry import Patience
from orchestrator.engine.store import Store
from orchestrator.engine.task_session import TaskSession
from orchestrator.state import Caps, Record
from orchestrator.state.events import CallResult
from orchestrator.state.tasks import now_ms
from orchestrator.store._line import encode
from orchestrator.team.postbox import Changes, Postbox
from orchestrator.team.writes import Writes

SESSION = "s1"


class Journals:
    """The tasks' journals of session `SESSION` in a real store, written as a worker
    writes them (a record's wall time chosen by the test)."""

    def __init__(self, tmp: Path) -> None:
        self.store = Store(sqlite_url(tmp / "engine.sqlite"))
        self.seqs: dict[str, int] = {}

    def add(self, task: str, *records: Record, at: int = 0, session: str = SESSION) -> None:
        key = f"{session}/{task}"
        lines = []
        for record in records:
            seq = self.seqs[key] = self.seqs.get(key, 0) + 1
            body = record.journal_body()
            lines.append(
                (seq, encode(seq, at or now_ms(), record.kind, record.agent, body, end=True))
            )
        self.store.append(key, lines)

    def start(self, task: str, scope: tuple[str, ...] | None, session: str = SESSION) -> None:
        self.add(
            task,
            AgentStarted(agent=task, role="worker", messages=(SystemMessage(content="w"),)),
            TaskCreated(
                agent="main", task=task, agent_type="worker", description=".", write_scope=scope
            ),
            session=session,
        )

    def shell(self, task: str, changed: tuple[str, ...], at: int = 0) -> None:
        """`task` ran a shell command that changed `changed`, its result written `at`."""
        seq = self.seqs.get(f"{SESSION}/{task}", 0) + 1
        call = ToolCall(id=f"c{seq}", name="shell", arguments='{"command": "make"}')
        self.add(
            task,
            AssistantReplied(agent=task, message=AssistantMessage(tool_calls=(call,))),
            CallResult(agent=task, ref=f"{seq}.0", content="exit code 0", changed=changed),
            at=at,
        )


async def writes_of(
    journals: Journals, task: str, *, others: bool = True
) -> tuple[Writes, TaskSession]:
    """The `Writes` of `task`'s team on a worker, over its session in the database, the
    other tasks read from there (unless `others` is False: what a team knew before)."""
    db = Patience(_ignore)
    session = await TaskSession.load(journals.store, f"{SESSION}/{task}", db)
    postbox = Postbox(session, session, Caps(), Changes())
    source = SessionTasks(journals.store, SESSION, db) if others else None
    return Writes(session, postbox, source), session


async def _ignore(notice: object) -> None:
    pass


def alerts(session: TaskSession) -> list[str]:
    return [m.summary for m in session.state.mailbox.messages.values() if m.kind == "risk_alert"]


@pytest.fixture
def journals(tmp_path: Path) -> Journals:
    found = Journals(tmp_path)
    found.start("t1", ("a/",))
    found.start("t2", ("b/",))
    return found


async def test_a_change_in_another_task_s_scope_is_not_taken(journals: Journals) -> None:
    writes, session = await writes_of(journals, "t1")
    since = trio.current_time()
    counted = await writes.note_writes("t1", ["a/x.py", "b/y.py", "c.txt"], "shell", since)
    assert counted == ["a/x.py", "c.txt"]
    assert alerts(session) == ["its shell command changed files outside its write scope: c.txt"]
    # Its own team alone would take b/y.py for its own, outside its scope.
    alone, _ = await writes_of(journals, "t1", others=False)
    counted = await alone.note_writes("t1", ["a/x.py", "b/y.py"], "shell", since)
    assert counted == ["a/x.py", "b/y.py"]


async def test_a_file_another_task_changed_during_the_command_is_not_taken(
    journals: Journals,
) -> None:
    journals.start("t3", None)  # may write anywhere
    now = now_ms()
    journals.shell("t3", ("before.txt",), at=now - 60_000)  # long before the command
    journals.shell("t3", ("during.txt", "./both.txt"), at=now - 1_000)  # while it ran
    journals.shell("t1", ("mine.txt",), at=now - 1_000)  # its own, earlier command
    writes, session = await writes_of(journals, "t1")
    started = trio.current_time() - 5  # the command took 5 s
    counted = await writes.note_writes(
        "t1", ["a/z.py", "before.txt", "during.txt", "both.txt", "mine.txt"], "shell", started
    )
    assert counted == ["a/z.py", "before.txt", "mine.txt"]
    outside = "before.txt, mine.txt"  # (t1 may write in a/ only)
    assert alerts(session) == [
        f"its shell command changed files outside its write scope: {outside}"
    ]


async def test_each_look_reads_what_is_new_of_every_task_of_the_session(
    journals: Journals,
) -> None:
    source = SessionTasks(journals.store, SESSION, Patience(_ignore))
    first = await source.writes()
    assert first.scopes == {"t1": ("a/",), "t2": ("b/",)}
    assert first.wrote == {}
    # A task begun since, another session's, and new records of a task read before.
    journals.start("t4", ("d/",))
    journals.start("t9", ("e/",), session="s2")
    journals.shell("t2", ("b/new.py",), at=1234)
    rows = journals.store.session_tail(SESSION, {f"{SESSION}/t1": 2, f"{SESSION}/t2": 2})
    assert {key: [seq for seq, _ in lines] for key, lines in rows.items()} == {
        f"{SESSION}/t2": [3, 4],
        f"{SESSION}/t4": [1, 2],
    }
    second = await source.writes()
    assert second.scopes == {"t1": ("a/",), "t2": ("b/",), "t4": ("d/",)}
    assert second.wrote == {"b/new.py": {"t2": 1234}}
    assert source._read == {f"{SESSION}/t1": 2, f"{SESSION}/t2": 4, f"{SESSION}/t4": 2}


def test_the_tail_of_many_tasks_is_read_at_once(tmp_path: Path) -> None:
    journals = Journals(tmp_path)
    tasks = [f"t{n}" for n in range(205)]
    for task in tasks:
        journals.start(task, (f"{task}/",))
    after = {f"{SESSION}/{task}": 1 for task in tasks[::2]}  # half read up to their start
    rows = journals.store.session_tail(SESSION, after)
    assert {key: [seq for seq, _ in lines] for key, lines in rows.items()} == {
        f"{SESSION}/{task}": [2] if f"{SESSION}/{task}" in after else [1, 2] for task in tasks
    }
