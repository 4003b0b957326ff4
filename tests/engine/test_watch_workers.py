"""`sessions watch` of a session whose task ran on a worker: the task's turns and calls,
read from its journal in the engine's database, among the session's own records in the
order they were written; a database it cannot read is said, and the journal shown."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

pytest.importorskip("dbos")

from orchestrator import RunResult, RunSettings, ScriptedModel, SessionSettings, drive, open_session
from orchestrator.engine import dbos_workers
from orchestrator.models.scripted import parse_script
from orchestrator.tools import PermissionPolicy, approve_all, workspace_tools
from tests.engine.sessions import ONE_TASK, SHOWN_KINDS, Setup
from tests.engine.workers import start_worker
from tests.scenes import call


async def run_on_workers(setup: Setup) -> RunResult:
    """The session run with its engine journaled, as the command line runs it (the
    library journals none by itself): a watch reads from its settings where its tasks are."""
    settings = RunSettings(
        model=ScriptedModel(parse_script(setup.script)),
        tools=workspace_tools(),
        policy=PermissionPolicy(),
        approve=approve_all,
        session=SessionSettings(engine="dbos", engine_database=setup.url, engine_workers=True),
        runner=dbos_workers(
            setup.url, model=f"scripted:{setup.script_file}", workspace=setup.workspace
        ),
    )
    async with open_session(setup.root, setup.session_id, warn=lambda _: None) as live:
        return await drive(live, settings)


async def ran_on_a_worker(tmp_path: Path) -> Setup:
    """ONE_TASK's session, run to its end with its task on a worker."""
    setup = Setup(tmp_path, ONE_TASK)
    async with trio.open_nursery() as nursery:
        worker = await start_worker(nursery, setup.url, tmp_path)
        with trio.fail_after(120):
            result = await run_on_workers(setup)
        await worker.stop()
    assert result.status == "completed", (result, worker.lines)
    return setup


def environment(setup: Setup) -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1", "ORCHESTRATOR_SESSIONS_DIR": str(setup.root)}
    env.pop("ORCHESTRATOR_CONFIG", None)
    return env


def watch(setup: Setup, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "sessions", "watch", setup.session_id, *flags],
        capture_output=True,
        text=True,
        env=environment(setup),
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


async def test_a_watch_shows_the_task_on_a_worker_among_the_session_s_records(
    tmp_path: Path,
) -> None:
    setup = await ran_on_a_worker(tmp_path)

    watched = watch(setup, "--json", "--instant", "--database-url", setup.url)
    assert watched.returncode == 0, watched.stderr
    lines: list[dict[str, Any]] = [orjson.loads(line) for line in watched.stdout.splitlines()]
    t1 = [
        (e["kind"], e.get("call", {}).get("name", ""))
        for e in lines
        if e["agent"] == "t1" and e["kind"] in SHOWN_KINDS
    ]
    assert t1 == [
        ("turn_started", ""),
        ("assistant_replied", ""),
        ("tool_call_started", "write_file"),
        ("tool_call_finished", ""),
        ("assistant_replied", ""),
        ("tool_call_started", "complete"),
        ("tool_call_finished", ""),
        ("turn_ended", ""),
    ], watched.stdout
    # Among the session's records, by the time each was written: after the session made
    # the task, before it passed on the task's completion.
    kinds = [(e["kind"], e.get("state") or e.get("mail", "")) for e in lines]
    created = kinds.index(("task_created", "pending"))
    wrote = next(
        n for n, e in enumerate(lines) if e["kind"] == "tool_call_started" and e["agent"] == "t1"
    )
    completed = kinds.index(("message_posted", "completed"))
    assert created < wrote < completed, kinds
    times = [e["time"] for e in lines]
    assert times == sorted(times)
    # The task's lines carry no seq: theirs is their own journal's, not the session's.
    assert all("seq" not in e for e in lines if e["agent"] == "t1" and e["kind"] in SHOWN_KINDS)

    plain = watch(setup, "--plain", "--instant", "--database-url", setup.url)
    assert "[t1]   → write_file path='a.txt' content='A'" in plain.stdout, plain.stdout


async def test_a_watch_that_cannot_read_the_database_says_so_and_shows_the_journal(
    tmp_path: Path,
) -> None:
    setup = await ran_on_a_worker(tmp_path)
    missing = f"sqlite:///{tmp_path / 'elsewhere.sqlite'}"
    watched = watch(setup, "--plain", "--instant", "--database-url", missing)
    assert watched.returncode == 0, watched.stderr
    assert (
        f"its tasks on workers are not shown: {missing}: no database file "
        f"{tmp_path / 'elsewhere.sqlite'}" in watched.stdout
    ), watched.stdout
    assert watched.stdout.count("its tasks on workers are not shown") == 1
    assert "write_file" not in watched.stdout  # (the task's calls are not in the journal)
    assert f"session {setup.session_id} completed" in watched.stdout


async def test_a_watch_follows_a_running_session_s_task_on_a_worker(tmp_path: Path) -> None:
    """Started while the task's shell call waits on a worker: the watch shows the call
    from the database at once, then the rest as the task does it, to the session's end."""
    script = {
        "agents": {
            **ONE_TASK["agents"],
            "t1": [
                {"tool_calls": [call("shell", command="cat go")]},
                {"tool_calls": [call("shell", command="cat again")]},
                {"tool_calls": [call("complete", summary="went")]},
            ],
        }
    }
    setup = Setup(tmp_path, script)
    os.mkfifo(setup.workspace / "go")
    os.mkfifo(setup.workspace / "again")
    async with trio.open_nursery() as nursery:
        worker = await start_worker(nursery, setup.url, tmp_path)
        ended = trio.Event()

        async def session() -> None:
            await run_on_workers(setup)
            ended.set()

        nursery.start_soon(session)
        with trio.fail_after(120):
            await worker.see("task t1: call shell")
            command = [sys.executable, "-m", "orchestrator", "sessions", "watch"]
            flags = [setup.session_id, "--plain", "--database-url", setup.url]
            watch = await trio.lowlevel.open_process(
                [*command, *flags],
                stdout=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                env=environment(setup),
            )
            assert watch.stdout is not None
            seen = b""
            while b"[t1]   \xe2\x86\x92 shell command='cat go'" not in seen:
                seen += await watch.stdout.receive_some()
            assert b"followed" in seen  # (a running session, not a replay)
            await trio.to_thread.run_sync((setup.workspace / "go").write_text, "go\n")
            # Shown while the task waits again, as it happens: the session is still running.
            while "[t1]   → shell command='cat again'".encode() not in seen:
                seen += await watch.stdout.receive_some()
            assert "[t1]     ✓ shell: exit code 0 go".encode() in seen
            await trio.to_thread.run_sync((setup.workspace / "again").write_text, "again\n")
            async for chunk in watch.stdout:
                seen += chunk
            await watch.wait()
            await ended.wait()
        await worker.stop()
    shown = seen.decode()
    assert watch.returncode == 0
    assert shown.count("[t1]   → shell command='cat go'") == 1, shown
    assert "[t1]     ✓ shell: exit code 0 go" in shown, shown
    assert "[t1]   → complete summary='went'" in shown, shown
    assert shown.rstrip().endswith(f"session {setup.session_id} completed"), shown
