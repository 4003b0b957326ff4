"""A task on a worker delegates as a local task does (issue 44, item 2): its children are
workflows on the engine's queue, taken by any worker, with journals of their own in the
engine's database and their mail through it; the parent's team on its worker follows
them, the session shows them under it, and a parent whose worker is killed is taken over
by another worker that follows its children again, never starting them twice."""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

pytest.importorskip("dbos")

import sqlalchemy as sa

from orchestrator import load_state, session_report
from orchestrator.engine import sqlite_url
from orchestrator.engine.shown import read_worker_records
from orchestrator.engine.store import Store
from orchestrator.engine.tables import RUNS
from orchestrator.state.events import event_from_json
from orchestrator.view import ViewModel
from tests.crash.harness import cli
from tests.engine.sessions import Setup, main_script
from tests.engine.workers import WorkerProcess, start_worker
from tests.scenes import call

CHILDREN = ("t1.t1", "t1.t2")


def _waits(n: int) -> list[dict[str, Any]]:
    return [{"tool_calls": [call("wait_tasks")]} for _ in range(n)]


def _child(task: str, folder: str) -> list[dict[str, Any]]:
    """Its work, once: a line in its log; then it says it is ready and waits at its gate
    (FIFOs the test reads and writes), in the same call."""
    command = f"echo {task} >> {folder}/log.txt; echo x > {folder}/ready; cat {folder}/gate"
    return [
        {"tool_calls": [call("shell", command=command)]},
        {"tool_calls": [call("complete", summary=f"{task} done")]},
    ]


PARENT_AND_CHILDREN: dict[str, Any] = {
    "agents": {
        "main": main_script(
            call("delegate", description="lead", prompt="split", write_scope=["out/**"]), waits=4
        ),
        "t1": [
            {
                "tool_calls": [
                    call("delegate", description="a", prompt="do a", write_scope=["out/a/**"])
                ]
            },
            # (Its second child is made once the test has started the second worker.)
            {"tool_calls": [call("shell", command="cat out/gate")]},
            {
                "tool_calls": [
                    call("delegate", description="b", prompt="do b", write_scope=["out/b/**"])
                ]
            },
            *_waits(4),
            {"tool_calls": [call("complete", summary="both done")]},
        ],
        "t1.t1": _child("t1.t1", "out/a"),
        "t1.t2": _child("t1.t2", "out/b"),
    }
}


def _may_delegate(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers' agent type `worker` may delegate (a user's agent file, in the
    config directory the workers are started with)."""
    config = tmp / "config"
    (config / "agents").mkdir(parents=True)
    (config / "agents" / "worker.toml").write_text("may_delegate = true\n")
    monkeypatch.setenv("ORCHESTRATOR_CONFIG_DIR", str(config))


def _journal(url: str, key: str) -> list[dict[str, Any]]:
    store = Store(url)
    try:
        return [orjson.loads(line) for _, line in store.records(key)]
    finally:
        store.close()


def _runs(url: str, key: str) -> list[str]:
    """The workflows recorded for task `key` (`orchestrator_task_runs`)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as db:
            query = sa.select(RUNS.c.workflow_id).where(RUNS.c.task == key)
            return [row[0] for row in db.execute(query)]
    finally:
        engine.dispose()


def _release(fifo: Path) -> None:
    """A reader blocked on `fifo` let go (nothing when none is there)."""
    with contextlib.suppress(OSError):
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)


@dataclass
class OnTheCommandLine:
    """A session run by `orchestrator run --engine dbos --workers` (so its settings say
    its tasks are on workers, and `sessions show` reads them there)."""

    tmp: Path
    script: dict[str, Any]
    root: Path = field(init=False)
    workspace: Path = field(init=False)
    url: str = field(init=False)

    def __post_init__(self) -> None:
        self.root, self.workspace = self.tmp / "sessions", self.tmp / "ws"
        self.workspace.mkdir()
        (self.tmp / "script.json").write_bytes(orjson.dumps(self.script))
        self.url = sqlite_url(self.tmp / "engine.sqlite")

    async def run(self) -> subprocess.CompletedProcess[bytes]:
        command = cli(
            "run",
            "lead the work",
            "-m",
            f"scripted:{self.tmp / 'script.json'}",
            "--workspace",
            str(self.workspace),
            "--engine",
            "dbos",
            "--workers",
            "--database-url",
            self.url,
            "--yes",
            "--json",
            sessions=self.root,
        )
        return await trio.run_process(
            command, capture_stdout=True, capture_stderr=True, check=False
        )

    @property
    def directory(self) -> Path:
        [directory] = self.root.iterdir()
        return directory


async def test_a_parent_on_a_killed_worker_resumes_elsewhere_and_its_children_run_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """t1, on worker w1 (room for two tasks), delegates a child, which w1 takes, then
    (once w2 is started) another, which w2 takes; both hold in their shell call. w1 is
    SIGKILLed with t1 waiting on them and its child mid-call; w2 takes both over (the call reported
    interrupted, never run again), t1's team follows its children again (their
    workflows found open, not started twice), the other child is let go, t1 gets both
    completions and completes, and so does the session: each child's work done once,
    the session's tree whole, `sessions verify` passing."""
    _may_delegate(tmp_path, monkeypatch)
    setup = OnTheCommandLine(tmp_path, PARENT_AND_CHILDREN)
    folders = {"t1.t1": setup.workspace / "out" / "a", "t1.t2": setup.workspace / "out" / "b"}
    for folder in folders.values():
        folder.mkdir(parents=True)
        os.mkfifo(folder / "ready")
        os.mkfifo(folder / "gate")
    os.mkfifo(setup.workspace / "out" / "gate")
    outcome: list[subprocess.CompletedProcess[bytes]] = []

    ended = trio.Event()

    async def session() -> None:
        outcome.append(await setup.run())
        ended.set()

    async def holds(task: str) -> None:
        """Once `task` holds in its shell call (it has said so on its FIFO)."""
        read = (folders[task] / "ready").read_text
        await trio.to_thread.run_sync(read, abandon_on_cancel=True)

    async def write(fifo: Path) -> None:
        await trio.to_thread.run_sync(fifo.write_text, "go\n", abandon_on_cancel=True)

    async with trio.open_nursery() as nursery:
        first = await start_worker(nursery, setup.url, tmp_path, "w1", "--concurrency", "2")
        workers: list[WorkerProcess] = [first]
        nursery.start_soon(session)
        with trio.fail_after(180):
            await holds("t1.t1")  # on w1, which has t1 and it: no room for another
            second = await start_worker(nursery, setup.url, tmp_path, "w2")
            workers.append(second)
            await second.see("takes tasks from")
            await write(setup.workspace / "out" / "gate")  # t1 makes t1.t2: w2 takes it
            await holds("t1.t2")
            first.kill()
            await first.process.wait()
            _release(folders["t1.t1"] / "gate")  # (its shell, should it outlive w1)
            await second.see("is silent: its tasks are queued again")
            await write(folders["t1.t2"] / "gate")
            await ended.wait()
        for worker in workers:
            await worker.stop()
    (run,) = outcome
    assert run.returncode == 0, (run.stderr.decode()[-3000:], second.lines)
    session_id, url = setup.directory.name, setup.url
    # Each child's work, once (the killed one's call was cut off and not run again).
    for task, folder in folders.items():
        assert (folder / "log.txt").read_text() == f"{task}\n"
    (w1,) = {line.split()[1] for line in first.lines[:1]}
    (w2,) = {line.split()[1] for line in second.lines[:1]}
    # Where each ran: t1 and one child on w1, then on w2; the other child on w2 alone.
    for task, workers_of in (("t1", [w1, w2]), ("t1.t1", [w1, w2]), ("t1.t2", [w2])):
        records = _journal(url, f"{session_id}/{task}")
        ran = [r["ran_on"]["worker"] for r in records if r.get("ran_on") and r["task"] == task]
        assert ran == workers_of, (task, ran)
        assert _runs(url, f"{session_id}/{task}") == [f"{session_id}/{task}"]  # one workflow
    cut = [r for r in _journal(url, f"{session_id}/t1.t1") if r["k"] == "call_result"]
    assert [r.get("status", "ok") for r in cut] == ["interrupted", "ok"]
    # The parent's journal: its children made once, each completion posted there once.
    parent = _journal(url, f"{session_id}/t1")
    made = [r["task"] for r in parent if r["k"] == "task_created"]
    assert made == ["t1", *CHILDREN]
    for task in CHILDREN:
        posted = [r for r in parent if r["k"] == "message_posted" and r["a"] == task]
        assert [p["mail"] for p in posted] == ["completed"]
    # The session: t1 completed once; its subtree's model calls counted here, once.
    state = load_state(setup.directory, warn=pytest.fail)
    assert state.status == "completed"
    assert {t.task_id: t.state for t in state.tasks.tasks.values()} == {"t1": "completed"}
    journal = (setup.directory / "journal.jsonl").read_text()
    assert journal.count('"mail":"completed"') == 1
    replies = sum(
        1
        for task in ("t1", *CHILDREN)
        for r in _journal(url, f"{session_id}/{task}")
        if r["k"] == "assistant_replied"
    )
    assert state.agents["t1"].steps == replies
    # The live view, from the run's events (`--json`): the children under t1, completed.
    view = ViewModel()
    for line in run.stdout.splitlines():
        view.apply(event_from_json(line))
    assert view.agents["t1"].children == list(CHILDREN)
    assert {t: view.agents[t].task_state for t in CHILDREN} == dict.fromkeys(CHILDREN, "completed")
    _check_tree(setup, w2)


def _check_tree(setup: OnTheCommandLine, w2: str) -> None:
    """The session's tree as `sessions show` reads it: the children under t1, completed,
    where they ran; and `sessions verify` passes."""
    session_id, url = setup.directory.name, setup.url
    report = session_report(
        setup.root, session_id, workers=lambda sid, _: read_worker_records(url, sid)
    )
    tasks = report.tasks
    assert {t: (tasks[t].owner, tasks[t].state) for t in CHILDREN} == {
        t: ("t1", "completed") for t in CHILDREN
    }
    for task in CHILDREN:  # (where each ran last)
        ran_on = tasks[task].ran_on
        assert ran_on is not None
        assert ran_on.worker == w2
    assert set(report.on_workers.tasks if report.on_workers else ()) == {"t1", *CHILDREN}
    shown = subprocess.run(
        cli("sessions", "show", session_id, "--database-url", url, sessions=setup.root),
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert "└─ t1" in shown.stdout, shown.stdout
    assert "├─ t1.t1" in shown.stdout, shown.stdout
    verify = subprocess.run(
        cli("sessions", "verify", session_id, sessions=setup.root),
        capture_output=True,
        text=True,
        check=False,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


SCOPE, OUT, INSIDE = ["a/**"], ["b/**"], ["a/x/**"]
LIMITS: dict[str, Any] = {
    "agents": {
        "main": main_script(
            call("delegate", description="lead", prompt="go", write_scope=["a/**"])
        ),
        "t1": [
            {"tool_calls": [call("delegate", description="out", prompt="x", write_scope=["b/**"])]},
            {
                "tool_calls": [
                    call("delegate", description="in", prompt="x", write_scope=["a/x/**"])
                ]
            },
            *_waits(2),
            {"tool_calls": [call("complete", summary="delegated")]},
        ],
        "t1.t1": [
            {"tool_calls": [call("delegate", description="deeper", prompt="x")]},
            {"tool_calls": [call("write_file", path="a/x/f.txt", content="F")]},
            {"tool_calls": [call("complete", summary="wrote f")]},
        ],
    }
}


async def test_a_worker_s_delegation_keeps_the_depth_limit_and_the_write_scopes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """t1 on a worker (write scope a/**) is refused a child writing b/** and given one
    writing a/x/**; that child, at depth 2 of a session's limit of 2, is refused a child
    of its own, as a local task is, and does its work."""
    _may_delegate(tmp_path, monkeypatch)
    setup = Setup(tmp_path, LIMITS)
    await setup.on_a_worker()
    state = load_state(setup.directory, warn=pytest.fail)
    assert state.settings is not None
    limit = state.settings.max_depth
    assert limit == 2
    assert (setup.workspace / "a" / "x" / "f.txt").read_text() == "F"
    session_id, url = setup.session_id, setup.url
    parent = _journal(url, f"{session_id}/t1")
    results = [r for r in parent if r["k"] == "call_result"]
    assert "is not inside your own write scope" in results[0]["content"]
    assert "task_id=t1.t1" in results[1]["content"]
    (child,) = [r for r in parent if r["k"] == "task_created" and r["task"] == "t1.t1"]
    assert (child["depth"], child["write_scope"], child["owner_task"]) == (2, INSIDE, "t1")
    (refused, *_) = [r for r in _journal(url, f"{session_id}/t1.t1") if r["k"] == "call_result"]
    assert f"it would be depth 3, past the limit of {limit}" in refused["content"]
    assert not [r for r in parent if r["k"] == "task_created" and r["task"].count(".") > 1]
