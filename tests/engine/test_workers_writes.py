"""Two tasks of one session on workers share the workspace: a shell command of one,
running while the other writes a file in its own write scope, sees that file change, and
must not take it for its own (engine/other_tasks.py). The tasks run on one worker (two
teams in one process) or on two (one each); FIFOs the test holds decide the order."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

pytest.importorskip("dbos")

from orchestrator import load_state
from tests.engine.sessions import Setup, main_writes_a_and_b
from tests.engine.workers import start_worker
from tests.scenes import call

SCRIPT: dict[str, Any] = {
    "agents": {
        "main": main_writes_a_and_b(["a/"], ["b/"]),
        "t1": [
            # Its command runs until the test lets it end, after t2 wrote b/b.txt.
            {
                "tool_calls": [
                    call("shell", command="echo x > a/mine.txt && echo 1 > a/ready && cat a/go")
                ]
            },
            {"tool_calls": [call("complete", summary="made a", files_changed=["a/mine.txt"])]},
        ],
        "t2": [
            {"tool_calls": [call("shell", command="cat b/go")]},  # begins once t1's runs
            {"tool_calls": [call("write_file", path="b/b.txt", content="B")]},
            {"tool_calls": [call("shell", command="echo 1 > b/wrote")]},  # (it wrote)
            {"tool_calls": [call("complete", summary="made b", files_changed=["b/b.txt"])]},
        ],
    }
}


async def _read(fifo: Path) -> None:
    await trio.to_thread.run_sync(fifo.read_text, abandon_on_cancel=True)


async def _write(fifo: Path) -> None:
    await trio.to_thread.run_sync(fifo.write_text, "go\n", abandon_on_cancel=True)


@pytest.mark.parametrize("workers", [1, 2], ids=["one-worker", "two-workers"])
async def test_a_shell_command_does_not_take_another_task_s_write_for_its_own(
    tmp_path: Path, workers: int
) -> None:
    setup = Setup(tmp_path, SCRIPT)
    ws = setup.workspace
    for fifo in ("a/ready", "a/go", "b/go", "b/wrote"):
        (ws / fifo).parent.mkdir(exist_ok=True)
        os.mkfifo(ws / fifo)
    outcome = []
    ended = trio.Event()

    async def session() -> None:
        outcome.append(await setup.run())
        ended.set()

    # Two workers take one task each (one at a time); one takes both (two teams).
    extra = ("--concurrency", "1") if workers == 2 else ()
    async with trio.open_nursery() as nursery:
        started = [
            await start_worker(nursery, setup.url, tmp_path, f"w{n}", *extra)
            for n in range(workers)
        ]
        nursery.start_soon(session)
        with trio.fail_after(120):
            await _read(ws / "a/ready")  # t1's command runs (its "before" is taken)
            await _write(ws / "b/go")
            await _read(ws / "b/wrote")  # t2 wrote b/b.txt meanwhile
            await _write(ws / "a/go")  # t1's command ends: b/b.txt changed during it
            await ended.wait()
        for worker in started:
            await worker.stop()
    (result,) = outcome
    assert result.status == "completed", (result, [w.lines for w in started])
    state = load_state(setup.directory, warn=pytest.fail)
    assert {t.task_id: t.state for t in state.tasks.tasks.values()} == {
        "t1": "completed",
        "t2": "completed",
    }
    where = {t.ran_on.worker for t in state.tasks.tasks.values() if t.ran_on}
    assert len(where) == workers
    # t1's command is seen to change its own file only, and its completion is accepted
    # at once, neither listing nor flagging t2's; nobody is alerted.
    results = [orjson.loads(line) for line in setup.task_lines() if b'"k":"call_result"' in line]
    assert [r.get("changed") for r in results] == [["a/mine.txt"], None]
    completed = {
        m["task"]: m["data"]
        for line in setup.journal_lines('"k":"message_posted"', '"mail":"completed"')
        for m in [orjson.loads(line)]
    }
    assert completed["t1"]["unlisted_changes"] == completed["t2"]["unlisted_changes"] == []
    assert completed["t1"]["outside_scope"] == completed["t2"]["outside_scope"] == []
    assert not setup.journal_lines('"mail":"risk_alert"')
