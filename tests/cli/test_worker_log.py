"""The line `orchestrator worker` prints for each call its tasks start and each state they
reach (cli/worker.py's `WorkerLog`): written out once the loop yields, those of one pass
in one write, and the worker's own lines at once, after the ones before them."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from orchestrator.cli.worker import WorkerLog
from orchestrator.state.tasks import TaskChanged


async def test_a_pass_s_lines_are_written_together_once_the_loop_yields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = WorkerLog()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(log.keep_flushing)
        await log.emit(TaskChanged(agent="main", task="t1", state="running"))
        await log.emit(TaskChanged(agent="main", task="t2", state="failed", reason="no\x1bpe"))
        assert capsys.readouterr().out == ""  # (the loop has not yielded)
        await trio.testing.wait_all_tasks_blocked()
        assert capsys.readouterr().out == "task t1: running\ntask t2: failed (no\\x1bpe)\n"
        await log.emit(TaskChanged(agent="main", task="t1", state="completed"))
        log.say("worker w1: runs no task")  # (at once, after the task's line)
        assert capsys.readouterr().out == "task t1: completed\nworker w1: runs no task\n"
        nursery.cancel_scope.cancel()
