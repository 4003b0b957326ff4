"""The dbos engine with its tasks on worker processes (issue 26, "Measure"), for
bench_engine.py's `--workers`: W3's session with its subagents on `orchestrator worker`
processes (started by `tests/engine/workers.py`, as the tests start them), and the time a
task takes to go on elsewhere after its worker is killed (SIGKILL) mid-call.

A worker makes its model from the session's model spec: a script file (`scripted:PATH`)
whose `latency` makes every reply wait, as `bench_engine.Work`'s responder does in the
session's process. The subagents are of the built-in type `explorer` (a worker knows only
its own agent types, not the benchmark's `bench`): each round but the last reads a file
of 200 bytes (`r<n>.txt`, a different one each round), the last completes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import sqlalchemy as sa
import trio

from orchestrator.engine import dbos_workers
from orchestrator.engine.store import Store
from orchestrator.models.scripted import Responder, ScriptedModel, parse_script
from orchestrator.session.live import create_session, open_session
from orchestrator.state.events import NullSink
from orchestrator.state.settings import SessionSettings
from orchestrator.store import Durability
from orchestrator.team.drive import RunSettings, drive
from orchestrator.team.subagent import InProcessRunner
from orchestrator.tools import PermissionPolicy, approve_all, workspace_tools
from tests.engine.workers import WorkerProcess, start_worker

AGENT_TYPE = "explorer"


def read_round(step: int) -> dict[str, Any]:
    """A subagent's round `step` but its last: read `r<step>.txt`."""
    return {"name": "read_file", "arguments": {"path": f"r{step}.txt"}}


def workspace(root: Path, rounds: int) -> Path:
    """The session's workspace, with the files the subagents read."""
    path = root / "workspace"
    path.mkdir()
    for n in range(rounds):
        (path / f"r{n}.txt").write_text(f"round {n} ".ljust(199, ".") + "\n")
    return path


def workers_script(path: Path, rounds: int, latency: float) -> Path:
    """The script the workers' model reads: every subagent's rounds, each reply after
    `latency` seconds (the session's main agent has its own responder)."""
    replies = [{"tool_calls": [read_round(n)]} for n in range(rounds - 1)]
    replies.append({"tool_calls": [{"name": "complete", "arguments": {"summary": "done"}}]})
    path.write_bytes(orjson.dumps({"latency": latency, "agents": {"*": replies}}))
    return path


def made(url: str) -> str:
    """`url`, its database made first when it is a Postgres one that is not there yet: a
    worker does not make it (DBOS does, launched by the session), and waits for it as
    for a database that does not answer."""
    if url.startswith("postgresql"):
        base, name = url.rsplit("/", 1)
        server = sa.create_engine(f"{base}/postgres", isolation_level="AUTOCOMMIT")
        try:
            with server.connect() as db:
                query = sa.text("SELECT 1 FROM pg_database WHERE datname = :n")
                if db.execute(query, {"n": name}).first() is None:
                    db.execute(sa.text(f'CREATE DATABASE "{name}"'))
        finally:
            server.dispose()
    return url


async def start_workers(
    nursery: trio.Nursery, url: str, root: Path, count: int, *options: str
) -> list[WorkerProcess]:
    """`count` workers on `url`, each ready (the first makes the database's tables)."""
    workers = []
    for n in range(count):
        worker = await start_worker(nursery, url, root, f"worker{n}", *options)
        await worker.see("takes tasks from")
        workers.append(worker)
    return workers


async def w3_session(
    root: Path,
    url: str,
    workers: int,
    responder: Responder,
    *,
    tasks: int,
    rounds: int,
    latency: float,
    concurrency: int,
) -> tuple[float, float]:
    """One W3 session (the main agent's replies from `responder`) with its subagents on
    `workers` worker processes (0: in this process, `InProcessRunner`, the same model and
    tools), each running `concurrency` tasks at once: `perf_counter` when `drive`
    returned, and the CPU seconds the workers used."""
    space = workspace(root, rounds)
    script = workers_script(root / "workers.json", rounds, latency)
    sessions = root / "sessions"
    session_id, _ = create_session(
        sessions, goal="bench", model=f"scripted:{script}", workspace=space
    )
    runner: Callable[[trio.Nursery], Any] = InProcessRunner
    if workers:
        runner = dbos_workers(url, model=f"scripted:{script}", workspace=space)
    live_cap = max(tasks, 8)
    settings = RunSettings(
        model=ScriptedModel(responder, name="scripted:bench"),
        tools=workspace_tools(),
        ui=NullSink(),
        policy=PermissionPolicy(),
        approve=approve_all,
        session=SessionSettings(
            max_rounds=rounds + 3, max_live=live_cap, max_model_calls=max(live_cap, 16)
        ),
        runner=runner,
    )
    options = ("--concurrency", str(concurrency), "--beat", "5", "--silent", "30")
    async with trio.open_nursery() as nursery:
        started = await start_workers(nursery, url, root, workers, *options)
        cpu = -sum(_cpu(worker.process.pid) for worker in started)  # their start apart
        async with open_session(
            sessions, session_id, durability=Durability.BATCH, warn=print
        ) as live:
            result = await drive(live, settings)
            ended = time.perf_counter()
            states = [t.state for t in live.state.tasks.tasks.values()]
        cpu += sum(_cpu(worker.process.pid) for worker in started)
        for worker in started:
            await worker.stop()
    assert result.status == "completed", result
    assert states == ["completed"] * tasks, states
    return ended, cpu


def _cpu(pid: int) -> float:
    """The CPU seconds (user and system) process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- recovery after a worker is killed --------------------------------------------------


@dataclass(frozen=True)
class Recovery:
    """Seconds from the SIGKILL of the worker running a task to: `detected`, the other
    worker saying it is silent (and queueing its workflows again); `queued`, the task's
    workflow seen `ENQUEUED` again; `dequeued`, seen `PENDING` on the other worker;
    `record`, the task's next record in the database (its cut-off call, `interrupted`)."""

    detected: float
    queued: float
    dequeued: float
    record: float


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


RECOVERY_SCRIPT: dict[str, Any] = {
    "agents": {
        "main": [
            {"tool_calls": [_call("delegate", description="long", prompt="work long")]},
            *[{"tool_calls": [_call("wait_tasks")]} for _ in range(3)],
            *[{"text": f"done ({n})"} for n in range(4)],
        ],
        "t1": [
            {"tool_calls": [_call("shell", command="echo x > ready; sleep 600")]},
            {"tool_calls": [_call("complete", summary="went on elsewhere")]},
        ],
    }
}


async def recovery(root: Path, url: str, *, beat: float, silent: float) -> Recovery:
    """Two workers (`--beat`, `--silent`); a session's one task starts a long shell call on
    one of them, which is killed; when does the task go on on the other?"""
    space = root / "workspace"
    space.mkdir()
    os.mkfifo(space / "ready")
    script = root / "recovery.json"
    script.write_bytes(orjson.dumps(RECOVERY_SCRIPT))
    sessions = root / "sessions"
    session_id, _ = create_session(
        sessions, goal="recover", model=f"scripted:{script}", workspace=space
    )
    settings = RunSettings(
        model=ScriptedModel(parse_script(RECOVERY_SCRIPT)),
        tools=workspace_tools(),
        ui=NullSink(),
        policy=PermissionPolicy(),
        approve=approve_all,
        runner=dbos_workers(url, model=f"scripted:{script}", workspace=space),
    )
    key = f"{session_id}/t1"
    store = Store(url)
    database = sa.create_engine(url)
    table = "workflow_status" if url.startswith("sqlite") else "dbos.workflow_status"
    status = sa.text(f"SELECT status, executor_id FROM {table} WHERE workflow_uuid = :w")
    options = ("--beat", str(beat), "--silent", str(silent))
    marks: dict[str, float] = {}
    try:
        async with trio.open_nursery() as nursery:
            workers = await start_workers(nursery, url, root, 2, *options)
            done = trio.Event()

            async def session() -> None:
                async with open_session(sessions, session_id, warn=print) as live:
                    result = await drive(live, settings)
                assert result.status == "completed", result
                done.set()

            nursery.start_soon(session)
            # Its shell call has begun (journaled before it began): on which worker?
            await trio.to_thread.run_sync((space / "ready").read_text, abandon_on_cancel=True)
            victim = next(w for w in workers if any("task t1: call shell" in x for x in w.lines))
            (survivor,) = (w for w in workers if w is not victim)
            survivor_id = (await survivor.see("takes tasks from")).split()[1]
            victim_id = (await victim.see("takes tasks from")).split()[1]
            head = (await trio.to_thread.run_sync(store.records, key))[-1][0]
            victim.kill()
            killed = time.perf_counter()

            async def detect() -> None:
                # (Its line, not another's: a worker of an earlier run may be found
                # silent too, one that stopped with a task running.)
                await survivor.see(f"worker {victim_id} is silent: its tasks are queued again")
                marks["detected"] = time.perf_counter()

            def look() -> tuple[Any, bool]:
                with database.connect() as db:
                    row = db.execute(status, {"w": key}).first()
                return row, bool(store.records(key, head))  # (a record past `head`)

            nursery.start_soon(detect)
            while "record" not in marks:
                (state, executor), moved = await trio.to_thread.run_sync(look)
                now = time.perf_counter()
                if state == "ENQUEUED":
                    marks.setdefault("queued", now)
                if state == "PENDING" and executor == survivor_id:
                    marks.setdefault("dequeued", now)
                if moved:
                    marks["record"] = now
                await trio.sleep(0.01)  # a look at another process's database, no event to wait on
            await victim.process.wait()
            await done.wait()
            await survivor.stop()
    finally:
        store.close()
        database.dispose()
    return Recovery(**{k: marks.get(k, float("nan")) - killed for k in Recovery.__annotations__})
