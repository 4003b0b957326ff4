"""Several worker processes on Postgres, killed (SIGKILL) at random calls of their tasks
and replaced: every task completes, every message reaches the session once, every call
is answered once, and the workspace is the one an uninterrupted run leaves."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

pytest.importorskip("dbos")

from orchestrator import load_state
from orchestrator.engine.store import Store
from tests.engine.sessions import Setup
from tests.engine.workers import WorkerProcess, printed, start_worker
from tests.scenes import call

TASKS = 6
ROUNDS = 4
KILLS = 3


def script() -> dict[str, Any]:
    tasks = {}
    for n in range(1, TASKS + 1):
        rounds = [
            {"tool_calls": [call("write_file", path=f"t{n}/r{r}.txt", content=f"t{n} r{r}\n")]}
            for r in range(1, ROUNDS + 1)
        ]
        tasks[f"t{n}"] = [
            *rounds,
            {"tool_calls": [call("complete", summary=f"t{n} done")]},
        ]
    delegations = [
        call("delegate", description=f"task {n}", prompt="write", write_scope=[f"t{n}/**"])
        for n in range(1, TASKS + 1)
    ]
    return {
        "agents": {
            "main": [
                {"tool_calls": delegations},
                *[{"tool_calls": [call("wait_tasks")]} for _ in range(TASKS + 2)],
                *[{"text": f"done ({n})"} for n in range(8)],
            ],
            **tasks,
        }
    }


async def test_workers_killed_at_random_calls_lose_nothing(
    tmp_path: Path, postgres_url: str
) -> None:
    rng = random.Random(os.environ.get("ORCHESTRATOR_CRASH_SEED", "26"))
    setup = Setup(tmp_path, script())
    setup.url = postgres_url.rsplit("/", 1)[0] + f"/workers_{rng.randrange(10**9)}"
    calls = TASKS * (ROUNDS + 1)
    kill_at = sorted(rng.sample(range(2, calls - 2), KILLS))
    ended = trio.Event()
    async with trio.open_nursery() as nursery:

        async def session() -> None:
            await setup.run()
            ended.set()

        workers: list[WorkerProcess] = []

        def worker(name: str) -> Any:
            return start_worker(nursery, setup.url, tmp_path, name, "--concurrency", "3")

        for n in range(2):
            workers.append(await worker(f"w{n}"))
        nursery.start_soon(session)
        with trio.fail_after(300):
            for k, at in enumerate(kill_at):
                # A call's line: "task t3: call write_file (6.0)", printed once journaled.
                with trio.move_on_after(120) as waited:  # (the session may end first)
                    await printed(workers, ": call ", at)
                if waited.cancelled_caught or ended.is_set():
                    break
                victim = rng.choice([w for w in workers if w.process.returncode is None])
                victim.kill()
                await victim.process.wait()
                workers.append(await worker(f"w{k + 2}"))
            await ended.wait()
        for worker in workers:
            await worker.stop()
    assert sum(w.process.returncode == -9 for w in workers) >= 2, "killed too late"
    state = load_state(setup.directory, warn=pytest.fail)
    assert state.status == "completed"
    assert {t.state for t in state.tasks.tasks.values()} == {"completed"}
    journal = (setup.directory / "journal.jsonl").read_text()
    store = Store(setup.url)
    try:
        for n in range(1, TASKS + 1):
            # Its completion posted here once, and read by the main agent once.
            assert journal.count(f'"id":"t{n}.m1"') == 1
            assert journal.count(f'"t{n}.m1"') == 2  # posted, then delivered
            for r in range(1, ROUNDS + 1):
                assert (setup.workspace / f"t{n}" / f"r{r}.txt").read_text() == f"t{n} r{r}\n"
            # Every call has one result: one cut off by a kill was run again (its tool is
            # idempotent), never answered twice. (test_workers.py kills a worker in a shell
            # call, which is not run again.)
            records = [orjson.loads(line) for _, line in store.records(f"{setup.session_id}/t{n}")]
            results = [r["ref"] for r in records if r["k"] == "call_result"]
            assert len(results) == len(set(results)) == ROUNDS + 1
    finally:
        store.close()  # (a failure would leave its connection to a later test)
