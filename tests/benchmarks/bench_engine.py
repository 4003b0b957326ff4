"""What the dbos engine costs (issue 26, "Measure"): its overhead per delegated task
against the local runner, on SQLite and on Postgres, and W3 with a model that takes its
time, on each engine, in this one process and with its subagents on worker processes,
and the time a task takes to go on after its worker is killed.

    .venv/bin/python tests/benchmarks/bench_engine.py [--quick] [--runs N]
        [--tasks N1 N2] [--rounds R] [--w3 N] [--latency S] [--no-postgres] [--workers 1 2]
        [--concurrency N] [--silent 30 3] [--recovery-runs N] [--parts ...]

Every run is a real session on disk (`create_session` / `open_session` / `drive`, the
journal's `batch` policy), driven by a scripted model (a Python responder). Subagents
are `bench_team.py`'s (role `bench`, whose one tool is `fixed`, read-only, 200 bytes).
The engines: `local` (`InProcessRunner`), `sqlite` (`dbos_runner` on a SQLite file of
the run's own, as the CLI's default is one per session) and `postgres` (`dbos_runner`
on a Postgres started here by `tests/engine/postgres.py`, durable: Postgres's defaults,
every commit flushed; one database for every run, made by DBOS on first use). A machine
without Postgres skips it, saying why.

- **Overhead per task.** Today one delegated task is one DBOS workflow with one step
  (the task's whole loop), so the overhead per task is the overhead per step. A session
  whose main agent delegates N tasks, each of which calls `complete` at once, in two
  shapes: `serial` (delegate one, wait for it, then the next: what one task waits) and
  `parallel` (all N in one reply, then wait: what N tasks cost together). The engines'
  runs are interleaved, at two sizes N1 < N2, `--runs` times; medians of `drive`'s wall
  (`--rounds R`: each task makes R model calls and R tool calls, `fixed` R-1 times, then
  `complete`; the overhead per call, the issue's step, is then printed beside the
  overhead per task: the engine pays per task, nothing per call in this process)
  and CPU time (this process's: Postgres's own CPU is not in it). A run on dbos also
  launches and destroys DBOS, a cost per session: the overhead per task is the slope,
  (dbos - local at N2 minus dbos - local at N1) / (N2 - N1), and the cost per session
  what is left at N1. The ratio dbos / local is that of the time per task (the slopes).
  Target (the issue): at most 2 ms per step on Postgres on loopback.
- **W3 on the engine.** `--w3` subagents (1,000) of 5 rounds, each model call answered
  after `--latency` seconds (0.05; `ScriptedModel` over an async responder that sleeps
  on trio), all delegated at once, `max_live` and `max_model_calls` at N: on `local`,
  then on each dbos database with its default cap on running tasks (`max_threads`, 64:
  each running task holds one of DBOS's threads) and with the cap at N. The wall time
  against the floor (6 calls of the latency: 5 rounds and the main agent's delegating
  reply) and against `local`'s, in one run each (`--runs` for W3 too in a full run).
- **W3 on workers** (`--workers 1 2`): the same W3 session with its subagents on 1 and
  2 `orchestrator worker` processes (engine_workers.py; `--concurrency`, W3's N by
  default) on Postgres (a database of their own), next to the session with its
  subagents in this process (`local`). A worker makes its model from the session's model
  spec, a script file whose `latency` makes each reply wait as `Work`'s does here, and
  knows only the built-in agent types: these subagents are `explorer`s reading a file
  of 200 bytes each round (`local` too, so the two compare). The workers' CPU during the
  session is printed beside this process's. Without Postgres, on a SQLite file.
- **Recovery** (`--silent 30 3`): two workers (`--silent S --beat S/6`, as the CLI's
  defaults 30 and 5), a session's one task in a long shell call on one of them, which is
  killed (SIGKILL); the seconds from the kill to the other worker saying it is silent,
  to the task's workflow queued again and taken by the other (DBOS's record, polled every
  10 ms), and to the task's next record in the database.

`--parts` runs some of `overhead w3 workers recovery` only.
`--quick` (under two minutes): N1, N2 = 2, 8, 3 runs, W3 at 50 subagents, once;
recovery at `--silent 3` only.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from orchestrator.engine import dbos_runner, require_dbos, sqlite_url  # noqa: E402
from orchestrator.errors import ConfigError  # noqa: E402
from orchestrator.models.base import ModelRequest  # noqa: E402
from orchestrator.models.scripted import ScriptedCall, ScriptedReply  # noqa: E402
from orchestrator.session.live import open_session  # noqa: E402
from orchestrator.state.settings import SessionSettings  # noqa: E402
from orchestrator.store import Durability  # noqa: E402
from orchestrator.team.drive import drive  # noqa: E402
from orchestrator.team.port import Runner  # noqa: E402
from orchestrator.team.queries import MAIN  # noqa: E402
from orchestrator.team.subagent import InProcessRunner  # noqa: E402
from orchestrator.tools import ToolRegistry  # noqa: E402
from tests.benchmarks import engine_workers  # noqa: E402
from tests.benchmarks.bench_team import DEFINITIONS, Fixed  # noqa: E402
from tests.benchmarks.shape import bench_session, bench_settings  # noqa: E402
from tests.engine import postgres  # noqa: E402

SHAPES = ("serial", "parallel")
W3_ROUNDS = 5
TARGET_MS = 2.0


@dataclass(frozen=True)
class Engine:
    """Where a run's tasks run: `local`, or dbos on `sqlite` or `postgres` (its URL),
    with DBOS's cap on running tasks (`max_threads`; 0: the engine's default)."""

    kind: str
    url: str = ""
    max_threads: int = 0

    @property
    def label(self) -> str:
        return self.kind + (f" (cap {self.max_threads})" if self.max_threads else "")

    def runner(self, root: Path) -> Callable[[trio.Nursery], Runner]:
        if self.kind == "local":
            return InProcessRunner
        url = sqlite_url(root / "engine.sqlite") if self.kind == "sqlite" else self.url
        if self.max_threads:
            return dbos_runner(url, max_threads=self.max_threads)
        return dbos_runner(url)


class Work:
    """The scripted model's responder. The main agent delegates `tasks` tasks, all in one
    reply (`parallel`) or one at a time, each followed by `wait_tasks` (`serial`), then
    answers; each subagent calls `fixed` in each of its `rounds` rounds but the last,
    which calls `complete`. Every call is answered after `latency` seconds."""

    def __init__(
        self,
        tasks: int,
        *,
        rounds: int = 1,
        shape: str = "parallel",
        latency: float = 0.0,
        files: bool = False,
    ):
        self.tasks, self.rounds, self.shape, self.latency = tasks, rounds, shape, latency
        self.files = files  # subagents of type `explorer` reading files, as on workers
        self.marks: list[tuple[float, float]] = []  # at the main agent's first and last call

    async def __call__(self, request: ModelRequest) -> ScriptedReply:
        if request.agent == MAIN and (request.step == 0 or request.step == self.last_step):
            self.marks.append((time.perf_counter(), time.process_time()))
        if self.latency:
            await trio.sleep(self.latency)
        if request.agent != MAIN:
            if request.step < self.rounds - 1:
                if self.files:
                    return _reply(**engine_workers.read_round(request.step))
                return _reply("fixed", n=request.step)
            return _reply("complete", summary=f"{request.agent} done")
        if self.shape == "serial":
            if request.step < self.last_step:
                if request.step % 2:
                    return _reply("wait_tasks", timeout=600)
                return ScriptedReply(tool_calls=(_delegate(request.step // 2),))
            return ScriptedReply(text="all done")
        if request.step == 0:
            kind = engine_workers.AGENT_TYPE if self.files else "bench"
            return ScriptedReply(tool_calls=tuple(_delegate(i, kind) for i in range(self.tasks)))
        if request.step == 1:
            return _reply("wait_tasks", timeout=600)
        return ScriptedReply(text="all done")

    @property
    def last_step(self) -> int:
        """The step of the main agent's answer, once every task has completed."""
        return 2 * self.tasks if self.shape == "serial" else 2


def _delegate(i: int, agent_type: str = "bench") -> ScriptedCall:
    arguments = {
        "description": f"job {i}",
        "prompt": "go",
        "agent_type": agent_type,
        "write_scope": [],
    }
    return ScriptedCall(name="delegate", arguments=arguments)


def _reply(name: str, arguments: dict[str, Any] | None = None, **more: Any) -> ScriptedReply:
    call = ScriptedCall(name=name, arguments={**(arguments or {}), **more})
    return ScriptedReply(tool_calls=(call,))


@dataclass(frozen=True)
class Times:
    """A run's times, in seconds: `work`, from the main agent's first model call to its
    last (every task made, run and settled, the outcomes delivered), wall and this
    process's CPU; `end`, from there to the end of `drive` (the session and the engine
    closing)."""

    work: float
    work_cpu: float
    end: float


async def _session(root: Path, engine: Engine, work: Work) -> Times:
    session_id, _ = bench_session(root)
    live_cap = max(work.tasks, 8)
    settings = bench_settings(
        work,
        tools=ToolRegistry([Fixed()]),
        definitions=DEFINITIONS,
        session=SessionSettings(
            max_rounds=2 * work.tasks + 3, max_live=live_cap, max_model_calls=max(live_cap, 16)
        ),
        runner=engine.runner(root),
    )
    async with open_session(root, session_id, durability=Durability.BATCH, warn=print) as live:
        result = await drive(live, settings)
        ended = time.perf_counter()
        states = [t.state for t in live.state.tasks.tasks.values()]
    assert result.status == "completed", result
    assert states == ["completed"] * work.tasks, states
    (first, first_cpu), (last, last_cpu) = work.marks
    return Times(work=last - first, work_cpu=last_cpu - first_cpu, end=ended - last)


def run(engine: Engine, work: Work) -> Times:
    """One session in a fresh temporary directory, on `engine`."""
    root = Path(tempfile.mkdtemp(prefix="bench-engine-"))
    try:
        return trio.run(_session, root, engine, work)
    finally:
        shutil.rmtree(root)


def _median(runs: list[Times], field: str) -> float:
    return statistics.median(getattr(t, field) for t in runs)


# --- the overhead per task --------------------------------------------------------------


def overhead(engines: list[Engine], sizes: tuple[int, int], runs: int, rounds: int = 1) -> None:
    low, high = sizes
    calls = 2 * rounds  # its model calls, and one tool call each (`fixed`..., `complete`)
    print(
        f"\nOverhead per task (one workflow, one step): sessions of {low} and {high} tasks, "
        f"each task {rounds} model round(s) ({calls} model and tool calls); engines "
        f"interleaved, median of {runs}; ms from the main agent's first model call to its last"
    )
    for shape in SHAPES:
        times: dict[tuple[str, int], list[Times]] = {}
        for engine in engines:
            run(
                engine, Work(2, rounds=rounds, shape=shape)
            )  # warm-up: imports, DBOS's first launch, caches
        for _ in range(runs):
            for tasks in sizes:
                for engine in engines:
                    work = Work(tasks, rounds=rounds, shape=shape)
                    times.setdefault((engine.kind, tasks), []).append(run(engine, work))
        slopes = {}
        for engine in engines:
            small, large = times[(engine.kind, low)], times[(engine.kind, high)]
            slopes[engine.kind] = tuple(
                (_median(large, f) - _median(small, f)) * 1000 / (high - low)
                for f in ("work", "work_cpu")
            )
            print(
                f"  {shape:<8} {engine.kind:<8} {low:>3} tasks {_median(small, 'work') * 1000:7.1f}"
                f", {high:>3} tasks {_median(large, 'work') * 1000:7.1f} (CPU "
                f"{_median(large, 'work_cpu') * 1000:.1f}; runs "
                f"{', '.join(f'{t.work * 1000:.0f}' for t in large)}); the session's end "
                f"{_median(large, 'end') * 1000:.0f}; per task {slopes[engine.kind][0]:.2f} "
                f"wall, {slopes[engine.kind][1]:.2f} CPU"
            )
        local = slopes["local"]
        for engine in engines[1:]:
            wall, cpu = slopes[engine.kind]
            added = wall - local[0]
            per_call = added / calls
            print(
                f"  {shape:<8} {engine.kind:<8} overhead {added:.2f} ms per task wall "
                f"({cpu - local[1]:.2f} CPU); dbos / local {wall / local[0]:.1f} wall, "
                f"{cpu / local[1]:.1f} CPU; per task, target <= {TARGET_MS:g} ms: "
                f"{_verdict(added)}; per model or tool call {per_call:.2f} ms: {_verdict(per_call)}"
            )


def _verdict(ms: float) -> str:
    return "met" if ms <= TARGET_MS else "NOT met"


# --- W3 ---------------------------------------------------------------------------------


def w3(engines: list[Engine], tasks: int, latency: float, runs: int) -> None:
    floor = (W3_ROUNDS + 1) * latency
    print(
        f"\nW3: {tasks} subagents x {W3_ROUNDS} rounds, each model call answered after "
        f"{latency * 1000:.0f} ms (floor {floor:.2f} s); engines interleaved, median of "
        f"{runs}; s from the main agent's first model call to its last"
    )
    configs = [engines[0]]
    for engine in engines[1:]:
        configs += [engine, Engine(engine.kind, engine.url, max_threads=tasks)]
    times: dict[str, list[Times]] = {}
    for _ in range(runs):
        for engine in configs:
            work = Work(tasks, rounds=W3_ROUNDS, latency=latency)
            times.setdefault(engine.label, []).append(run(engine, work))
    local = _median(times[configs[0].label], "work")
    for engine in configs:
        mine = times[engine.label]
        wall = _median(mine, "work")
        print(
            f"  {engine.label:<20} {wall:6.2f} s (CPU {_median(mine, 'work_cpu'):5.2f} s), "
            f"/ floor {wall / floor:5.2f}, / local {wall / local:5.2f}; the session's end "
            f"{_median(mine, 'end'):.2f} s"
        )


def w3_on_workers(
    url: str, counts: list[int], tasks: int, latency: float, runs: int, concurrency: int
) -> None:
    """W3 with the session in this process and its subagents on 1, 2... worker processes
    (`orchestrator worker --concurrency N` on the database at `url`), next to the same
    session with its subagents in this process (`local`): the subagents of the built-in
    `explorer` type, each round a file read (engine_workers.py), the runs interleaved."""
    floor = (W3_ROUNDS + 1) * latency
    print(
        f"\nW3 on workers: {tasks} subagents (explorer, reading a file each round) x "
        f"{W3_ROUNDS} rounds, {latency * 1000:.0f} ms per model call (floor {floor:.2f} s), "
        f"workers at --concurrency {concurrency}; median of {runs}; s from the main "
        f"agent's first model call to its last"
    )
    times: dict[int, list[tuple[Times, float]]] = {}
    for _ in range(runs):
        for count in [0, *counts]:
            times.setdefault(count, []).append(_on_workers(url, count, tasks, latency, concurrency))
    local = statistics.median(t.work for t, _ in times[0])
    for count, mine in times.items():
        wall = statistics.median(t.work for t, _ in mine)
        cpu = statistics.median(t.work_cpu for t, _ in mine)
        workers_cpu = statistics.median(c for _, c in mine)
        label = "local (in process)" if not count else f"on {count} worker(s)"
        print(
            f"  {label:<20} {wall:6.2f} s (CPU {cpu:5.2f} s here, {workers_cpu:5.2f} s in "
            f"the workers), / floor {wall / floor:5.2f}, / local {wall / local:5.2f}; runs "
            f"{', '.join(f'{t.work:.2f}' for t, _ in mine)}"
        )


def _on_workers(
    url: str, count: int, tasks: int, latency: float, concurrency: int
) -> tuple[Times, float]:
    root = Path(tempfile.mkdtemp(prefix="bench-workers-"))
    work = Work(tasks, rounds=W3_ROUNDS, latency=latency, files=True)
    try:
        ended, workers_cpu = trio.run(
            functools.partial(
                engine_workers.w3_session,
                root,
                url,
                count,
                work,
                tasks=tasks,
                rounds=W3_ROUNDS,
                latency=latency,
                concurrency=concurrency,
            )
        )
    finally:
        shutil.rmtree(root)
    (first, first_cpu), (last, last_cpu) = work.marks
    return Times(work=last - first, work_cpu=last_cpu - first_cpu, end=ended - last), workers_cpu


def recovery(url: str, silents: list[float], runs: int) -> None:
    """The time a task takes to go on after its worker is killed, for each `--silent`
    (the workers beating every sixth of it, as the CLI's defaults do: 5 s and 30 s)."""
    print(
        "\nRecovery: two workers, a task's shell call running on one, which is killed "
        "(SIGKILL); s from the kill to ..."
    )
    for silent in silents:
        beat = silent / 6
        found = []
        for _ in range(runs):
            root = Path(tempfile.mkdtemp(prefix="bench-recovery-"))
            try:
                found.append(
                    trio.run(
                        functools.partial(
                            engine_workers.recovery, root, url, beat=beat, silent=silent
                        )
                    )
                )
            finally:
                shutil.rmtree(root)
        parts = ", ".join(
            f"{name} {_seen(statistics.median(getattr(r, name) for r in found))}"
            for name in engine_workers.Recovery.__annotations__
        )
        each = "; ".join(f"{r.record:.2f}" for r in found)
        print(
            f"  --silent {silent:g} --beat {beat:g}: {parts} (median of {runs}; the "
            f"task's next record after {each})"
        )


def _seen(seconds: float) -> str:
    return "not seen" if math.isnan(seconds) else f"{seconds:.2f}"


# --- main -------------------------------------------------------------------------------


def _machine() -> str:
    names = [
        line.split(":", 1)[1].strip()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.startswith("model name")
    ]
    model = names[0] if names else "?"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.python_implementation()} {platform.python_version()}, {platform.system()} "
        f"{platform.release()}, {os.cpu_count()} CPUs ({model}), load average {load}"
    )


def _engines(stack: ExitStack, use_postgres: bool) -> Iterator[Engine]:
    yield Engine("local")
    yield Engine("sqlite")
    reason = "--no-postgres" if not use_postgres else postgres.missing()
    if reason is not None:
        print(f"postgres: skipped ({reason})")
        return
    server = stack.enter_context(postgres.server(durable=True))
    yield Engine("postgres", server.rsplit("/", 1)[0] + "/orchestrator_bench")  # DBOS makes it


PARTS = ("overhead", "w3", "workers", "recovery")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, under two minutes")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=PARTS, help="(all)")
    parser.add_argument("--runs", type=int, help="runs per engine and size (5; --quick 3)")
    parser.add_argument("--tasks", type=int, nargs=2, metavar=("N1", "N2"), help="(10 50)")
    parser.add_argument("--rounds", type=int, default=1, help="model rounds per task (1)")
    parser.add_argument("--w3", type=int, metavar="N", help="W3's subagents (1000; --quick 50)")
    parser.add_argument("--w3-runs", type=int, help="W3's runs per engine (3; --quick 1)")
    parser.add_argument("--latency", type=float, default=0.05, help="W3's seconds per model call")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2], help="(1 2)")
    parser.add_argument("--concurrency", type=int, help="each worker's (default: W3's N)")
    parser.add_argument(
        "--silent", type=float, nargs="*", help="recovery's worker --silent (30 3; --quick 3)"
    )
    parser.add_argument("--recovery-runs", type=int, default=1, help="(1)")
    args = parser.parse_args(argv)
    try:
        require_dbos()
    except ConfigError as exc:
        sys.exit(str(exc))
    low, high = args.tasks or ((2, 8) if args.quick else (10, 50))
    runs = args.runs or (3 if args.quick else 5)
    tasks = args.w3 or (50 if args.quick else 1000)
    w3_runs = args.w3_runs or (1 if args.quick else 3)
    silents = args.silent if args.silent is not None else ([3.0] if args.quick else [30.0, 3.0])
    # The workers are other processes: they import this worktree's package too.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    print(_machine())
    with ExitStack() as stack:
        engines = list(_engines(stack, not args.no_postgres))
        if "overhead" in args.parts:
            overhead(engines, (low, high), runs, args.rounds)
        if "w3" in args.parts:
            w3(engines, tasks, args.latency, w3_runs)
        # Workers on Postgres, a database of their own; on SQLite (a file here) without it.
        if engines[-1].kind == "postgres":
            url = engine_workers.made(engines[-1].url.rsplit("/", 1)[0] + "/orchestrator_workers")
        else:
            url = sqlite_url(Path(stack.enter_context(tempfile.TemporaryDirectory())) / "w.sqlite")
            print(f"\nworkers: on SQLite ({url}), not the issue's Postgres")
        if "workers" in args.parts and args.workers:
            concurrency = args.concurrency or tasks
            w3_on_workers(url, args.workers, tasks, args.latency, w3_runs, concurrency)
        if "recovery" in args.parts and silents:
            recovery(url, silents, args.recovery_runs)
    print(f"\nload average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
