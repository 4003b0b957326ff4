"""Delegated tasks on workers (issue 26): a session on the dbos engine puts its tasks on
the engine's queue, `orchestrator worker` processes take and run them, and what the tasks
do comes back to the session as mail and task states."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

pytest.importorskip("dbos")

from orchestrator import (
    FanOut,
    ListSink,
    Team,
    TranscriptSink,
    load_state,
)
from orchestrator._version import __version__
from orchestrator.engine import sqlite_url
from orchestrator.engine.store import Store
from orchestrator.state import USER
from orchestrator.view import ViewModel
from tests.engine.sessions import ANSWERED as ANSWERED
from tests.engine.sessions import ONE_TASK as ONE_TASK
from tests.engine.sessions import SHOWN_KINDS as SHOWN_KINDS
from tests.engine.sessions import TWO_TASKS as TWO_TASKS
from tests.engine.sessions import Setup as Setup
from tests.engine.sessions import main_script as main_script
from tests.engine.sessions import of_t1, shown
from tests.engine.workers import WorkerProcess, mail_sent, start_worker
from tests.scenes import call


def held_task(description: str, prompt: str, holds: str, *then: dict[str, Any]) -> dict[str, Any]:
    """A script: the main agent delegates one task and waits; the task's first call writes
    "one" to log.txt, says it is ready (into the FIFO `ready` the test reads) and runs
    `holds`; then it makes the calls `then`, one a reply."""
    first = call("shell", command=f"echo one >> log.txt; echo x > ready; {holds}")
    task = [{"tool_calls": [c]} for c in (first, *then)]
    delegate = call("delegate", description=description, prompt=prompt)
    return {"agents": {"main": main_script(delegate), "t1": task}}


async def test_tasks_run_on_a_worker_and_report_back(tmp_path: Path) -> None:
    setup = Setup(tmp_path, TWO_TASKS)
    _, worker = await setup.on_a_worker()
    assert (setup.workspace / "a.txt").read_text() == "A"
    assert (setup.workspace / "b.txt").read_text() == "B"
    state = load_state(setup.directory, warn=pytest.fail)
    assert {t.task_id: t.state for t in state.tasks.tasks.values()} == {
        "t1": "completed",
        "t2": "completed",
    }
    # Their model calls count here (budgets, cost): once each, as their journals say.
    store = Store(setup.url)
    for task in ("t1", "t2"):
        replies = [
            orjson.loads(line)
            for _, line in store.records(f"{setup.session_id}/{task}")
            if b'"k":"assistant_replied"' in line
        ]
        spent = sum(r["message"]["usage"]["output_tokens"] for r in replies)
        assert state.agents[task].usage.output_tokens == spent > 0
        assert state.agents[task].steps == len(replies) == 2
    store.close()
    # Where each ran: the worker (its id is in its first line), another process.
    (worker_id,) = {line.split()[1] for line in worker.lines[:1]}
    assert {t.ran_on.worker for t in state.tasks.tasks.values() if t.ran_on} == {worker_id}
    assert all(t.ran_on and t.ran_on.pid == worker.process.pid for t in state.tasks.tasks.values())
    # Each completion reached the main agent once, under the id the worker gave it.
    completed = setup.journal_lines('"k":"message_posted"', '"mail":"completed"')
    assert len(completed) == 2
    assert '"id":"t1.m1"' in completed[0] + completed[1]
    assert '"id":"t2.m1"' in completed[0] + completed[1]
    # The tasks' own records are in the engine's database, not the session's journal.
    assert not setup.journal_lines('"k":"assistant_replied","a":"t1"')
    assert any(b'"write_file"' in line for line in setup.task_lines())
    assert any("task t1: call write_file" in line for line in worker.lines)


async def test_a_task_on_a_worker_is_shown_as_a_local_task_is(tmp_path: Path) -> None:
    """The session shows what its task on a worker does as it shows a local task's work
    (the live view, the transcript, --json): its turns, replies and calls, each once, read
    from the task's journal and never journaled in the session."""
    for name in ("local", "workers"):
        (tmp_path / name).mkdir()
    local = Setup(tmp_path / "local", ONE_TASK)
    here, here_transcript = ListSink(), io.StringIO()
    result = await local.run(sink=FanOut([here, TranscriptSink(here_transcript)]), local=True)
    assert result.status == "completed"
    setup = Setup(tmp_path / "workers", ONE_TASK)
    events, transcript = ListSink(), io.StringIO()
    await setup.on_a_worker(lambda: setup.run(sink=FanOut([events, TranscriptSink(transcript)])))
    assert (
        shown(events.events, "t1")
        == shown(here.events, "t1")
        == [
            ("turn_started", ""),
            ("assistant_replied", "writing a"),
            ("tool_call_started", "write_file"),
            ("tool_call_finished", "ok"),
            ("assistant_replied", ""),
            ("tool_call_started", "complete"),
            ("tool_call_finished", "ok"),
            ("turn_ended", ""),
        ]
    )
    # The plain transcript's lines of the task are a local task's (its message's id aside).
    lines = of_t1(transcript.getvalue())
    assert lines == [line.replace("(m1)", "(t1.m1)") for line in of_t1(here_transcript.getvalue())]
    assert lines == [
        "[t1] writing a",
        "[t1]   → write_file path='a.txt' content='A'",
        "[t1]     ✓ write_file: wrote 1 bytes to a.txt",
        "[t1]   → complete summary='wrote a'",
        "[t1]     ✓ complete: completion handed to your owner; your task is complete and your "
        "turn ends here (t1.m1)",
        "■ t1 turn yielded after 2 rounds",
    ]
    # The live view counts its model calls once, as the session does (`task_usage`).
    view = ViewModel()
    for event in events.events:
        view.apply(event)
    counted = load_state(setup.directory, warn=pytest.fail).agents["t1"]
    assert view.agents["t1"].own.usage == counted.usage
    assert view.agents["t1"].own.calls == counted.steps == 2
    # They are the task's records, in the engine's database: none in the session's journal.
    assert not setup.journal_lines('"a":"t1"', '"k":"call_result"')
    assert not setup.journal_lines('"a":"t1"', '"k":"turn_started"')


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["kill", "ctrl-c"])
async def test_a_stopped_worker_s_task_is_taken_over_and_nothing_runs_twice(
    tmp_path: Path, stop: signal.Signals
) -> None:
    """A worker SIGKILLed (or stopped with Ctrl+C) while its task's shell call runs:
    another worker sees it silent, has its workflow queued again and takes it; the call
    cut off is reported interrupted (never run again), and the task goes on from its
    records to completion."""
    script = held_task(
        "rounds",
        "do rounds",
        "sleep 60",
        call("shell", command="echo two >> log.txt"),
        call("complete", summary="rounds done"),
    )
    setup = Setup(tmp_path, script)
    ready = setup.workspace / "ready"
    os.mkfifo(ready)

    async def stopped(first: WorkerProcess) -> None:
        # Its shell call has begun (and its start is journaled).
        await trio.to_thread.run_sync(ready.read_text, abandon_on_cancel=True)
        first.process.send_signal(stop)

    await setup.taken_over(stopped)
    assert (setup.workspace / "log.txt").read_text() == "one\ntwo\n"
    records = setup.task_records()
    # Killed, the call is found cut off; stopped, the worker cancels it as it goes.
    cut = b"interrupted" if stop == signal.SIGKILL else b"cancelled"
    assert b'"ref":"6.0","status":"%s"' % cut in records
    assert len(setup.journal_lines('"mail":"completed"')) == 1


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
async def test_an_answer_reaches_a_task_on_a_worker_and_it_goes_on(
    tmp_path: Path, database: str, request: pytest.FixtureRequest
) -> None:
    """Mail into a task on a worker: its question reaches the main agent under the id
    the worker gave it, the answer is sent to the task's workflow (DBOS's `send`, under
    its key) and received there, and the task acts on it; on SQLite and on Postgres."""
    setup = Setup(tmp_path, ANSWERED)
    if database == "postgres":
        server = request.getfixturevalue("postgres_url")
        setup.url = server.rsplit("/", 1)[0] + f"/answer_{uuid.uuid4().hex}"
    await setup.on_a_worker()
    assert (setup.workspace / "choice.txt").read_text() == "x"
    records = setup.task_records()
    # The answer entered the task's context once, under the session's id for it.
    (answer,) = setup.journal_lines('"mail":"answer"')
    answer_id = orjson.loads(answer)["id"]
    assert records.count(b'"k":"message_posted","a":"main","id":"%s"' % answer_id.encode()) == 1
    assert b'"k":"messages_delivered","a":"t1","ids":["%s"]' % answer_id.encode() in records
    assert len(setup.journal_lines('"mail":"completed"')) == 1
    # It went by DBOS's messages, under its key, and was received.
    workflow = f"{setup.session_id}/t1"
    assert mail_sent(setup.url, workflow)[f"{workflow}:{answer_id}"] is True


async def test_a_task_on_a_worker_is_cancelled_there(tmp_path: Path) -> None:
    """Cancelled (by the person, through the team) while its shell call runs on a
    worker: the worker stops it, its process killed, and it never completes."""
    script = {
        "agents": {
            "main": [
                {"tool_calls": [call("delegate", description="long", prompt="work long")]},
                *[{"tool_calls": [call("wait_tasks")]} for _ in range(3)],
                *[{"text": f"done ({n})"} for n in range(4)],
            ],
            "t1": [
                {
                    "tool_calls": [
                        call("shell", command="echo x > ready; sleep 60; echo late > late")
                    ]
                },
                {"tool_calls": [call("complete", summary="too late")]},
            ],
        }
    }
    setup = Setup(tmp_path, script)
    os.mkfifo(setup.workspace / "ready")
    teams: list[Team] = []
    async with trio.open_nursery() as nursery:
        worker = await start_worker(nursery, setup.url, tmp_path)
        ended = trio.Event()

        async def session() -> None:
            await setup.run(on_team=teams.append)
            ended.set()

        nursery.start_soon(session)
        with trio.fail_after(120):
            await trio.to_thread.run_sync(
                (setup.workspace / "ready").read_text, abandon_on_cancel=True
            )
            await teams[0].cancel(USER, "t1", "not needed")
            await worker.see("task t1: cancelled")
            await ended.wait()
        await worker.stop()
    state = load_state(setup.directory, warn=pytest.fail)
    assert state.status == "completed"
    assert state.tasks.get("t1").state == "cancelled"
    assert not (setup.workspace / "late").exists()
    assert not setup.journal_lines('"mail":"completed"')


async def test_a_task_cancelled_before_a_worker_took_it_never_runs(tmp_path: Path) -> None:
    script = {
        "agents": {
            "main": [
                {"tool_calls": [call("delegate", description="long", prompt="work long")]},
                {"tool_calls": [call("cancel_task", task="t1", reason="not needed")]},
                *[{"text": f"done ({n})"} for n in range(4)],
            ],
            "t1": [{"tool_calls": [call("write_file", path="late", content="late")]}],
        }
    }
    setup = Setup(tmp_path, script)
    _, worker = await setup.on_a_worker()
    assert load_state(setup.directory, warn=pytest.fail).tasks.get("t1").state == "cancelled"
    assert not [line for line in worker.lines if "task t1" in line]
    assert not (setup.workspace / "late").exists()


async def test_the_session_killed_while_its_task_works_on_a_worker_resumes_and_follows_it(
    tmp_path: Path,
) -> None:
    """The main process SIGKILLed while a worker runs its task: the task goes on there;
    the resumed session finds its workflow still open, follows it, and gets its news
    once; nothing is run twice."""
    script = held_task(
        "gated", "wait for the gate", "cat gate", call("complete", summary="through the gate")
    )
    setup = Setup(tmp_path, script)
    for fifo in ("ready", "gate"):
        os.mkfifo(setup.workspace / fifo)
    flags = [
        "-m",
        f"scripted:{setup.script_file}",
        "-w",
        str(setup.workspace),
        "--yes",
        "--plain",
        "--engine",
        "dbos",
        "--workers",
        "--database-url",
        setup.url,
        "--sessions-dir",
        str(tmp_path / "cli-sessions"),
    ]
    command = [sys.executable, "-m", "orchestrator"]
    log = (tmp_path / "main.log").open("ab")
    tidy = contextlib.closing(log)
    quiet = {
        "stdout": log,
        "stderr": subprocess.STDOUT,
        "stdin": subprocess.DEVNULL,
        "env": {**os.environ, "PYTHONFAULTHANDLER": "1", "NO_COLOR": "1"},
    }
    with tidy:
        await _kill_and_resume(tmp_path, setup, command, flags, quiet)
    directory = next((tmp_path / "cli-sessions").iterdir())
    _check_killed_and_resumed(directory, setup)


async def _kill_and_resume(
    tmp_path: Path, setup: Setup, command: list[str], flags: list[str], quiet: dict[str, Any]
) -> None:
    async with trio.open_nursery() as nursery:
        worker = await start_worker(nursery, setup.url, tmp_path)
        with trio.fail_after(120):
            main = await trio.lowlevel.open_process([*command, "run", "go", *flags], **quiet)
            await trio.to_thread.run_sync(
                (setup.workspace / "ready").read_text, abandon_on_cancel=True
            )
            main.send_signal(signal.SIGKILL)
            await main.wait()
            (directory,) = (tmp_path / "cli-sessions").iterdir()
            resumed = await trio.lowlevel.open_process(
                [*command, "resume", directory.name, *flags[4:]], **quiet
            )
            # The resumed session follows the open workflow; then the gate opens.
            await trio.to_thread.run_sync(
                (setup.workspace / "gate").write_text, "go\n", abandon_on_cancel=True
            )
            with trio.move_on_after(60) as late:
                assert await resumed.wait() == 0
            if late.cancelled_caught:
                resumed.send_signal(signal.SIGABRT)  # its threads' stacks, to main.log
                await resumed.wait()
                raise AssertionError((tmp_path / "main.log").read_text()[-6000:])
        await worker.stop()
    assert [line for line in worker.lines if "task t1: running" in line] == ["task t1: running"]


def _check_killed_and_resumed(directory: Path, setup: Setup) -> None:
    state = load_state(directory, warn=pytest.fail)
    assert state.status == "completed"
    assert state.tasks.get("t1").state == "completed"
    assert (setup.workspace / "log.txt").read_text() == "one\n"
    journal = (directory / "journal.jsonl").read_text()
    assert journal.count('"mail":"completed"') == 1
    verify = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "sessions",
            "verify",
            directory.name,
            "--sessions-dir",
            str(directory.parent),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


async def test_a_worker_of_another_version_leaves_the_task_and_the_session_says_so(
    tmp_path: Path,
) -> None:
    """DBOS gives a worker only the tasks of sessions of its own version: another
    version's worker says it leaves them, the session says no worker of its version is
    alive, and one of its version, once started, runs the task."""
    setup = Setup(tmp_path, TWO_TASKS)
    notices: list[str] = []
    ended = trio.Event()

    async def session() -> None:
        await setup.run(ui=notices)
        ended.set()

    async with trio.open_nursery() as nursery:
        other = await start_worker(nursery, setup.url, tmp_path, "other", version="0.0.1")
        await other.see("takes tasks from")
        nursery.start_soon(session)
        with trio.fail_after(120):
            # The count is what was queued when it looked: the session queues each
            # task on its own, so a look between the two sees one.
            told = await other.see(f"queued task(s) of sessions of version {__version__}")
            assert "leaves the 1 " in told or "leaves the 2 " in told, told
            right = await start_worker(nursery, setup.url, tmp_path, "right")
            await ended.wait()
        await other.stop()
        await right.stop()
    assert not [line for line in other.lines if "task t" in line]
    assert [line for line in right.lines if "task t1: completed" in line]
    assert any("no worker of version" in text for text in notices)


async def test_a_worker_that_cannot_reach_the_workspace_fails_the_task_saying_so(
    tmp_path: Path,
) -> None:
    """The task's workspace is no directory on the worker: its workflow ends in error
    with the reason, and the session fails the task with it, never running it."""
    setup = Setup(tmp_path, TWO_TASKS)
    setup.task_workspace = tmp_path / "elsewhere"
    async with trio.open_nursery() as nursery:
        worker = await start_worker(nursery, setup.url, tmp_path)
        with trio.fail_after(120):
            await setup.run()
        await worker.stop()
    state = load_state(setup.directory, warn=pytest.fail)
    for task in ("t1", "t2"):
        record = state.tasks.get(task)
        assert record.state == "failed", record
        assert f"the workspace {setup.task_workspace} is not reachable from worker" in (
            record.reason
        )
    assert not [line for line in worker.lines if "task t" in line]


async def test_ctrl_c_stops_a_worker_started_with_sigint_ignored(tmp_path: Path) -> None:
    """A process may start with SIGINT ignored (its parent's choice, which a child keeps:
    a supervisor, a test runner's worker): a worker still stops on Ctrl+C."""
    url = sqlite_url(tmp_path / "engine.sqlite")
    ignore = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)"
    async with trio.open_nursery() as nursery:
        worker = await start_worker(nursery, url, tmp_path, "ignoring", before=ignore)
        with trio.fail_after(60):
            await worker.see("takes tasks from")
            worker.process.send_signal(signal.SIGINT)
            await worker.process.wait()
        nursery.cancel_scope.cancel()
    assert worker.process.returncode == 0
    assert worker.count("worker stopped") == 1
