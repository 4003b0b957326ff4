"""Scaling (issue 44, item 4): a session of tasks that wait on their model and burn CPU in
the shell, run with its tasks in the session's process (`local`), on 1 worker and on 2,
with the engine's database on SQLite and on Postgres. docs/engine.md ("How many workers")
reads its table.

    .venv/bin/python tests/benchmarks/bench_scaling.py [--tasks 200] [--rounds 5]
        [--latency 0.5] [--burn-ms 20] [--workers 1 2] [--runs 1] [--no-postgres]

The main agent delegates `--tasks` subagents in one reply (type `worker`: it has the
shell) and waits for them; each subagent takes `--rounds` model rounds, every model
call answered after `--latency` seconds (the scripted model's `latency`; the main
agent's replies wait as long): in each round but the last it runs one shell command that
burns `--burn-ms` of CPU (a `sh` loop, its length measured on this machine first), and
in the last it completes. `max_live` is the number of tasks, so nothing but the machine
holds them back; each worker runs `--concurrency` tasks at once (the number of tasks).

Printed for each configuration: the wall time from the main agent's first model call to
its last, the floor (the latency of one task's rounds and the main agent's reply), the
CPU of the session's process, of the workers and of the commands they ran (their
children), and so the CPU a task costs in each. On one host the CPU the run needs, not
the number of workers, bounds it: the script says so and models more hosts from the
CPU measured per task (a model, printed as such; only what ran is measured).

`tests/benchmarks/test_benchmarks_run.py` runs it at a tiny size, so it keeps working.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from orchestrator.engine import dbos_workers, require_dbos, sqlite_url  # noqa: E402
from orchestrator.errors import ConfigError  # noqa: E402
from orchestrator.models.base import ModelRequest  # noqa: E402
from orchestrator.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply  # noqa: E402
from orchestrator.session.live import create_session, open_session  # noqa: E402
from orchestrator.state.events import NullSink  # noqa: E402
from orchestrator.state.settings import SessionSettings  # noqa: E402
from orchestrator.store import Durability  # noqa: E402
from orchestrator.team.drive import RunSettings, drive  # noqa: E402
from orchestrator.team.queries import MAIN  # noqa: E402
from orchestrator.team.subagent import InProcessRunner  # noqa: E402
from orchestrator.tools import PermissionPolicy, approve_all, workspace_tools  # noqa: E402
from tests.benchmarks.engine_workers import _cpu, made, start_workers  # noqa: E402
from tests.engine import postgres  # noqa: E402

AGENT_TYPE = "worker"  # a built-in type with the shell: a worker knows only its own types


def burn_command(ms: float) -> str:
    """A `sh` command that burns about `ms` of CPU (its loop's length measured here)."""
    probe = 200_000
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["sh", "-c", _loop(probe)], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return _loop(max(1, round(probe * ms / 1000 / max(spent, 1e-6))))


def _loop(n: int) -> str:
    return f"i=0; while [ $i -lt {n} ]; do i=$((i+1)); done"


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def task_replies(rounds: int, command: str) -> list[dict[str, Any]]:
    """A subagent's replies: a shell command each round but the last, which completes
    (each command its own: the same call three times in a row is a stall)."""
    replies = [
        {"tool_calls": [_call("shell", command=f": round {n}; {command}")]}
        for n in range(rounds - 1)
    ]
    return [*replies, {"tool_calls": [_call("complete", summary="done")]}]


class Main:
    """The scripted model in the session's process: the main agent delegates `tasks`
    subagents at once, waits, answers; subagents (on `local`) reply from `replies`. Every
    call is answered after `latency` seconds; `marks` has (wall, CPU) at the main agent's
    first and last call."""

    def __init__(self, tasks: int, replies: list[dict[str, Any]], latency: float) -> None:
        self.tasks, self.replies, self.latency = tasks, replies, latency
        self.marks: list[tuple[float, float]] = []

    async def __call__(self, request: ModelRequest) -> ScriptedReply:
        if request.agent == MAIN and request.step in (0, 2):
            self.marks.append((time.perf_counter(), time.process_time()))
        await trio.sleep(self.latency)
        if request.agent != MAIN:
            calls = self.replies[min(request.step, len(self.replies) - 1)]["tool_calls"]
            return ScriptedReply(tool_calls=tuple(ScriptedCall(**c) for c in calls))
        if request.step == 0:
            return ScriptedReply(tool_calls=tuple(_delegate(i) for i in range(self.tasks)))
        if request.step == 1:
            return ScriptedReply(
                tool_calls=(ScriptedCall(name="wait_tasks", arguments={"timeout": 3600}),)
            )
        return ScriptedReply(text="all done")


def _delegate(i: int) -> ScriptedCall:
    arguments = {"description": f"job {i}", "prompt": "go", "agent_type": AGENT_TYPE}
    return ScriptedCall(name="delegate", arguments={**arguments, "write_scope": []})


@dataclass(frozen=True)
class Run:
    """One run's figures, in seconds: `wall` from the main agent's first model call to
    its last; CPU of the session's process (and of its children: the commands, on
    `local`) and of the workers (and theirs) over the same span."""

    wall: float
    session_cpu: float
    workers_cpu: float
    commands_cpu: float


async def session_run(
    root: Path, url: str, workers: int, *, tasks: int, rounds: int, latency: float, command: str
) -> Run:
    space = root / "workspace"
    space.mkdir()
    replies = task_replies(rounds, command)
    script = root / "workers.json"
    script.write_bytes(orjson.dumps({"latency": latency, "agents": {"*": replies}}))
    sessions = root / "sessions"
    session_id, _ = create_session(
        sessions, goal="scale", model=f"scripted:{script}", workspace=space
    )
    main = Main(tasks, replies, latency)
    runner: Callable[[trio.Nursery], Any] = InProcessRunner
    if workers:
        runner = dbos_workers(url, model=f"scripted:{script}", workspace=space)
    settings = RunSettings(
        model=ScriptedModel(main, name="scripted:scale"),
        tools=workspace_tools(),
        ui=NullSink(),
        policy=PermissionPolicy(),
        approve=approve_all,
        session=SessionSettings(
            max_rounds=rounds + 3, max_live=max(tasks, 8), max_model_calls=max(tasks, 16)
        ),
        runner=runner,
    )
    options = ("--concurrency", str(tasks), "--beat", "5", "--silent", "30")
    async with trio.open_nursery() as nursery:
        started = await start_workers(nursery, url, root, workers, *options)
        pids = [w.process.pid for w in started]
        before = _children_cpu(pids), sum(_cpu(p) for p in pids)
        async with open_session(
            sessions, session_id, durability=Durability.BATCH, warn=print
        ) as live:
            result = await drive(live, settings)
            states = [t.state for t in live.state.tasks.tasks.values()]
        after = _children_cpu(pids), sum(_cpu(p) for p in pids)
        for worker in started:
            await worker.stop()
    assert result.status == "completed", result
    assert states == ["completed"] * tasks, states
    (first, first_cpu), (last, last_cpu) = main.marks
    return Run(
        wall=last - first,
        session_cpu=last_cpu - first_cpu,
        workers_cpu=after[1] - before[1],
        commands_cpu=after[0] - before[0],
    )


def _children_cpu(pids: list[int]) -> float:
    """CPU seconds of the commands run so far: this process's children (`local`) and the
    workers' (those waited for: every command has been, once its call ended)."""
    mine = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = mine.ru_utime + mine.ru_stime
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
    return total


def one(url: str, workers: int, **sizes: Any) -> Run:
    root = Path(tempfile.mkdtemp(prefix="bench-scaling-"))
    try:
        return trio.run(functools.partial(session_run, root, url, workers, **sizes))
    finally:
        shutil.rmtree(root)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--burn-ms", type=float, default=20.0)
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--runs", type=int, default=1, help="runs of each configuration")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args(argv)
    try:
        require_dbos()
    except ConfigError as exc:
        sys.exit(str(exc))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    os.chdir(ROOT)  # (the workers import this tree's package)
    command = burn_command(args.burn_ms)
    sizes = {
        "tasks": args.tasks,
        "rounds": args.rounds,
        "latency": args.latency,
        "command": command,
    }
    floor = (args.rounds + 1) * args.latency
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{os.cpu_count()} CPUs, load average {load}; {args.tasks} tasks x {args.rounds} "
        f"rounds, {args.latency:g} s a model call, {args.rounds - 1} commands of "
        f"{args.burn_ms:g} ms CPU a task; floor {floor:.2f} s"
    )
    with tempfile.TemporaryDirectory() as scratch:
        databases = [("sqlite", sqlite_url(Path(scratch) / "w.sqlite"))]
        reason = "--no-postgres" if args.no_postgres else postgres.missing()
        with _postgres(reason) as server:
            if server:
                databases.append(("postgres", made(server.rsplit("/", 1)[0] + "/scaling")))
            for _ in range(args.runs):
                _table(databases, args.workers, floor, args.tasks, sizes)
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _postgres(reason: str | None) -> Any:
    if reason is not None:
        print(f"postgres: skipped ({reason})")
        from contextlib import nullcontext

        return nullcontext("")
    return postgres.server(durable=True)


def _table(
    databases: list[tuple[str, str]], counts: list[int], floor: float, tasks: int, sizes: Any
) -> None:
    local = one(databases[0][1], 0, **sizes)
    _line("local", local, floor, tasks, local.wall)
    for name, url in databases:
        for count in counts:
            _line(f"{count} worker(s), {name}", one(url, count, **sizes), floor, tasks, local.wall)


def _line(label: str, run: Run, floor: float, tasks: int, local: float) -> None:
    per_task = (run.session_cpu + run.workers_cpu + run.commands_cpu) / tasks * 1000
    print(
        f"  {label:<22} {run.wall:6.2f} s (/ floor {run.wall / floor:4.1f}, / local "
        f"{run.wall / local:4.2f}); CPU: session {run.session_cpu:5.2f} s, workers "
        f"{run.workers_cpu:5.2f} s, commands {run.commands_cpu:5.2f} s; "
        f"{per_task:5.1f} ms a task in all",
        flush=True,
    )


if __name__ == "__main__":
    main()
