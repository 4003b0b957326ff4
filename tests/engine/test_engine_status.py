"""What a person running workers can see (issue 44, item 5): `orchestrator engine status`
lists the workers and each session's queued and running tasks from the engine's database;
a worker says what it runs every `--status-every` seconds and at once on SIGUSR1; a worker
refuses a database written by a newer orchestrator in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

pytest.importorskip("dbos")

from orchestrator.engine.status import engine_status
from orchestrator.engine.store import Store
from orchestrator.engine.tables import META
from tests.engine.sessions import TWO_TASKS
from tests.engine.workers import start_worker
from tests.scenes import call

HELD = "until [ -f go ]; do sleep 0.05; done"  # t1's call runs until the test says go
SCRIPT: dict[str, Any] = {  # TWO_TASKS, but for t1's call
    "agents": {
        **TWO_TASKS["agents"],
        "t1": [
            {"tool_calls": [call("shell", command=HELD)]},
            {"tool_calls": [call("complete", summary="went")]},
        ],
    }
}


def status(url: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "engine", "status", "--database-url", url, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    parsed: dict[str, Any] = orjson.loads(done.stdout)
    return parsed


async def until(url: str, holds: Any) -> None:
    """Until the engine's status (read in-process) satisfies `holds`: the progress of
    other processes, which no event here can tell, looked at again every 0.1 s (once the
    session has made the database: reading it first would make an empty one)."""
    database = trio.Path(url.removeprefix("sqlite:///"))
    while True:
        if await database.exists() and holds(await trio.to_thread.run_sync(engine_status, url)):
            return
        await trio.sleep(0.1)


async def test_engine_status_and_a_worker_s_own_report(tmp_path: Path) -> None:
    root, workspace = tmp_path / "sessions", tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(SCRIPT))
    url = f"sqlite:///{tmp_path / 'engine.sqlite'}"
    command = [
        sys.executable, "-m", "orchestrator", "run", "write a and b", "-m", f"scripted:{script}",
        "--workspace", str(workspace), "--engine", "dbos", "--workers", "--database-url", url,
        "--yes", "--sessions-dir", str(root),
    ]  # fmt: skip
    env = {**os.environ, "NO_COLOR": "1", "ORCHESTRATOR_CONFIG_DIR": str(tmp_path / "none")}
    log = tmp_path / "session.err"
    err = log.open("wb")
    async with trio.open_nursery() as nursery:
        session = await trio.lowlevel.open_process(
            command, stdout=subprocess.DEVNULL, stderr=err, env=env
        )
        with trio.fail_after(120):
            # No worker yet: both tasks wait on the queue.
            await until(url, lambda s: sum(t.state == "queued" for t in s.tasks) == 2)
            shown = await trio.to_thread.run_sync(status, url)
            assert shown["workers"] == []
            [(session_id, tasks)] = shown["sessions"].items()
            assert (tasks["queued"], tasks["running"]) == (2, 0)
            assert {t["task"] for t in tasks["tasks"]} == {"t1", "t2"}

            worker = await start_worker(nursery, url, tmp_path, "w", "--status-every", "600")
            await worker.see("call shell")  # t1 runs its held call
            await until(url, lambda s: [t.task for t in s.tasks] == ["t1"])
            shown = await trio.to_thread.run_sync(status, url)
            [me] = shown["workers"]
            assert me["state"] == "alive"
            assert me["beat_seconds_ago"] < 5
            [running] = shown["sessions"][session_id]["tasks"]
            assert (running["task"], running["state"]) == ("t1", "running")
            assert running["worker"] == me["worker"]

            worker.process.send_signal(signal.SIGUSR1)  # what do you run?
            said = await worker.see(f"runs {session_id}/t1 for ")
            assert said.startswith(f"worker {me['worker']}: ")
            assert "; last beat " in said

            (workspace / "go").touch()
            code = await session.wait()
            err.close()
            assert code == 0, log.read_text()
        await worker.stop()
    shown = await trio.to_thread.run_sync(status, url)
    assert shown["sessions"] == {}
    assert [w["state"] for w in shown["workers"]] == ["stopped"]

    done = await trio.run_process(
        [sys.executable, "-m", "orchestrator", "engine", "status", "--database-url", url],
        capture_stdout=True,
    )
    text = done.stdout.decode()
    assert f"engine     {url}" in text
    assert "stopped" in text
    assert "none queued or running" in text


def test_a_worker_refuses_a_database_of_a_newer_format(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'engine.sqlite'}"
    store = Store(url)
    store.check_format()
    with store._begin() as db:
        db.execute(META.update().values(value="99"))
    store.close()
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "worker", "--database-url", url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: the engine's database is of format 99, written by a newer orchestrator; "
        "this one (1) does not take its tasks: upgrade it to the sessions' version"
    ]


def test_engine_status_names_a_missing_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'none.sqlite'}"
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "engine", "status", "--database-url", url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert f"no engine database at {tmp_path / 'none.sqlite'}" in done.stderr
    assert not (tmp_path / "none.sqlite").exists()
