"""The dbos engine's database goes away while a task works, and comes back: the session
waits for it, says so, and goes on; the task completes once (issue 26, faults)."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

pytest.importorskip("dbos")

import psycopg

import orchestrator as orc
from orchestrator.engine import dbos_runner
from orchestrator.models.scripted import parse_script
from orchestrator.state.events import event_from_json
from orchestrator.tools import workspace_tools
from orchestrator.tools.sandbox import Sandbox
from tests.crash.harness import cli
from tests.engine.postgres import Postgres
from tests.engine.sessions import delegates_once
from tests.scenes import call, run_settings


def script(fifo: Path, *, then: Path | None = None) -> dict[str, Any]:
    """A main agent that delegates one task and waits for it (then, given `then`, reads
    that FIFO: the session runs on until the test writes to it)."""
    last = [{"tool_calls": [call("shell", command=f"cat {then}")]}] if then else []
    task = [
        # Blocks until the test writes to the FIFO (after it stopped Postgres).
        {"tool_calls": [call("shell", command=f"cat {fifo} >> got.txt")]},
        {"tool_calls": [call("complete", summary="got it")]},
    ]
    return delegates_once("wait, then write", task, last)


class Watch:
    """The events people would see, with the moments the test waits for."""

    def __init__(self) -> None:
        self.events: list[orc.Event] = []
        self.blocked = trio.Event()  # the task's shell call runs
        self.waiting = trio.Event()  # the engine said it waits for its database
        self.back = trio.Event()  # and that it answers again

    async def emit(self, event: orc.Event, *, durable: bool = False) -> None:
        self.events.append(event)
        if isinstance(event, orc.ToolCallStarted) and event.agent == "t1":
            self.blocked.set()
        if isinstance(event, orc.EngineWaiting):
            self.waiting.set()
        if isinstance(event, orc.EngineBack):
            self.back.set()


async def test_a_database_away_while_a_task_works_is_waited_for(
    tmp_path: Path, postgres: Postgres
) -> None:
    root = tmp_path / "sessions"
    session_id, directory = orc.create_session(root, goal="g", model="x:y", workspace=None)
    fifo, end = tmp_path / "release", tmp_path / "end"
    os.mkfifo(fifo)
    os.mkfifo(end)
    url = postgres.url.rsplit("/", 1)[0] + "/orchestrator_engine"
    watch = Watch()
    model = orc.ScriptedModel(parse_script(script(fifo, then=end)))
    # Unsandboxed: the FIFOs are outside the workspace, where a sandbox hides /tmp.
    tools = workspace_tools(sandbox=Sandbox(level="off"))
    settings = run_settings(model, ui=watch, tools=tools, runner=dbos_runner(url, patience=120))
    result: list[orc.RunResult] = []

    async def run() -> None:
        async with orc.open_session(root, session_id, warn=lambda _: None) as live:
            result.append(await orc.drive(live, settings))

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await watch.blocked.wait()
            await trio.to_thread.run_sync(postgres.stop)
            # (Abandoned on cancel: a command that never reads would hang the test past
            # fail_after.)
            await trio.to_thread.run_sync(fifo.write_text, "released\n", abandon_on_cancel=True)
            await watch.waiting.wait()  # DBOS could not record the task's end
            await trio.to_thread.run_sync(postgres.start)
            await watch.back.wait()  # DBOS recorded it: the session may end
            await trio.to_thread.run_sync(end.write_text, "end\n", abandon_on_cancel=True)

    [outcome] = result
    assert outcome.status == "completed", outcome
    waited = [e for e in watch.events if isinstance(e, orc.EngineWaiting | orc.EngineBack)]
    assert [type(e) for e in waited] == [orc.EngineWaiting, orc.EngineBack]  # once for the outage
    # One line each in the transcript (and above the live view), and in --json.
    out = io.StringIO()
    transcript = orc.TranscriptSink(out, color=False)
    for event in waited:
        await transcript.emit(event)
    lost, back = out.getvalue().splitlines()
    assert lost.startswith("! the engine's database is unreachable ((psycopg.OperationalError)")
    assert "Connection refused); trying again in " in lost
    assert back.startswith("! the engine's database answers again (after ")
    assert [event_from_json(orjson.dumps(orc.event_json(e))) for e in waited] == waited
    state = orc.load_state(directory, warn=pytest.fail)
    assert state.tasks.get("t1").state == "completed"
    records = [
        orjson.loads(line) for line in (directory / "journal.jsonl").read_bytes().splitlines()
    ]
    completed = [r for r in records if r["k"] == "task_changed" and r["state"] == "completed"]
    assert len(completed) == 1
    assert (directory / "workspace" / "got.txt").read_text() == "released\n"  # ran once
    with psycopg.connect(url) as db:
        rows = db.execute("select workflow_uuid, status from dbos.workflow_status").fetchall()
    assert rows == [(f"{session_id}/t1", "SUCCESS")]
    verify = await trio.run_process(
        cli("sessions", "verify", session_id, sessions=root),
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_past_its_patience_the_run_ends_with_an_error_and_resumes(
    tmp_path: Path, postgres: Postgres
) -> None:
    """The command line, with `[engine] patience = 3`: the database stays away, the run
    ends with one clear error (and the process ends: DBOS's threads stop waiting), and
    once the database is back the session resumes and completes."""
    sessions = tmp_path / "sessions"
    fifo = tmp_path / "release"
    os.mkfifo(fifo)
    path = tmp_path / "script.json"
    path.write_bytes(orjson.dumps({"version": 1, **script(fifo)}))
    url = postgres.url.rsplit("/", 1)[0] + "/orchestrator_engine"
    config = tmp_path / "config.toml"
    config.write_text(f'[engine]\nkind = "dbos"\ndatabase_url = "{url}"\npatience = 3\n')
    env = {**os.environ, "NO_COLOR": "1", "ORCHESTRATOR_CONFIG": str(config)}
    run = cli(
        "run",
        "g",
        "-m",
        f"scripted:{path}",
        "--session-workspace",
        "--sandbox",  # the FIFO is outside the workspace, where a sandbox hides /tmp
        "off",
        "--yes",
        "--json",
        sessions=sessions,
    )
    kinds: list[str] = []
    log = tmp_path / "stderr.txt"
    with (
        log.open("wb") as stderr,
        subprocess.Popen(
            run, stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL, env=env
        ) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:
            event = orjson.loads(line)
            kinds.append(event["kind"])
            if event["kind"] == "tool_call_started" and event["call"]["name"] == "shell":
                postgres.stop()
                fifo.write_text("released\n")  # the task goes on; its end is not recorded
        code = proc.wait(timeout=120)
    errors = log.read_text()
    assert code == 1, errors
    assert "engine_waiting" in kinds
    assert "error: the engine's database was unreachable for 3s" in errors
    assert "the session can be resumed" in errors
    [directory] = sessions.iterdir()
    assert orc.load_state(directory, warn=pytest.fail).status == "failed"

    postgres.start()
    resume = subprocess.run(
        cli("resume", directory.name, "--yes", sessions=sessions),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert resume.returncode == 0, resume.stdout + resume.stderr
    state = orc.load_state(directory, warn=pytest.fail)
    assert state.status == "completed"
    assert state.tasks.get("t1").state == "completed"
    assert (directory / "workspace" / "got.txt").read_text() == "released\n"  # ran once
    verify = subprocess.run(
        cli("sessions", "verify", directory.name, sessions=sessions), capture_output=True, text=True
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
