"""What the dbos engine costs (issue 26, "Measure"): its overhead per delegated task
against the local runner, on SQLite and on Postgres, and W3 with a model that takes its
time, on each engine, all in this one process.

    .venv/bin/python tests/benchmarks/bench_engine.py [--quick] [--runs N]
        [--tasks N1 N2] [--w3 N] [--latency S] [--no-postgres] [--workers 1 2]

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
- **Workers** (`--workers 1 2`): W3 with the tasks run by worker processes on Postgres
  is where `w3_on_workers` stands; there are no workers yet (issue 26, Build 6), so it
  says so and measures nothing.

`--quick` (under a minute): N1, N2 = 2, 8, 3 runs, W3 at 50 subagents, once.
"""

from __future__ import annotations

import argparse
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
from orchestrator.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply  # noqa: E402
from orchestrator.session.live import create_session, open_session  # noqa: E402
from orchestrator.state.events import NullSink  # noqa: E402
from orchestrator.state.settings import SessionSettings  # noqa: E402
from orchestrator.store import Durability  # noqa: E402
from orchestrator.team.drive import RunSettings, drive  # noqa: E402
from orchestrator.team.port import Runner  # noqa: E402
from orchestrator.team.queries import MAIN  # noqa: E402
from orchestrator.team.subagent import InProcessRunner  # noqa: E402
from orchestrator.tools import PermissionPolicy, ToolRegistry, approve_all  # noqa: E402
from tests.benchmarks.bench_team import DEFINITIONS, Fixed  # noqa: E402
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
        self, tasks: int, *, rounds: int = 1, shape: str = "parallel", latency: float = 0.0
    ):
        self.tasks, self.rounds, self.shape, self.latency = tasks, rounds, shape, latency
        self.marks: list[tuple[float, float]] = []  # at the main agent's first and last call

    async def __call__(self, request: ModelRequest) -> ScriptedReply:
        if request.agent == MAIN and (request.step == 0 or request.step == self.last_step):
            self.marks.append((time.perf_counter(), time.process_time()))
        if self.latency:
            await trio.sleep(self.latency)
        if request.agent != MAIN:
            if request.step < self.rounds - 1:
                return _reply("fixed", n=request.step)
            return _reply("complete", summary=f"{request.agent} done")
        if self.shape == "serial":
            if request.step < self.last_step:
                if request.step % 2:
                    return _reply("wait_tasks", timeout=600)
                return ScriptedReply(tool_calls=(_delegate(request.step // 2),))
            return ScriptedReply(text="all done")
        if request.step == 0:
            return ScriptedReply(tool_calls=tuple(_delegate(i) for i in range(self.tasks)))
        if request.step == 1:
            return _reply("wait_tasks", timeout=600)
        return ScriptedReply(text="all done")

    @property
    def last_step(self) -> int:
        """The step of the main agent's answer, once every task has completed."""
        return 2 * self.tasks if self.shape == "serial" else 2


def _delegate(i: int) -> ScriptedCall:
    arguments = {
        "description": f"job {i}",
        "prompt": "go",
        "agent_type": "bench",
        "write_scope": [],
    }
    return ScriptedCall(name="delegate", arguments=arguments)


def _reply(name: str, **arguments: Any) -> ScriptedReply:
    return ScriptedReply(tool_calls=(ScriptedCall(name=name, arguments=arguments),))


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
    script = root / "unused-script.json"
    script.write_text('{"agents": {}}')
    session_id, _ = create_session(root, goal="bench", model=f"scripted:{script}", workspace=None)
    live_cap = max(work.tasks, 8)
    settings = RunSettings(
        model=ScriptedModel(work, name="scripted:bench"),
        tools=ToolRegistry([Fixed()]),
        ui=NullSink(),
        policy=PermissionPolicy(),
        approve=approve_all,
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


def overhead(engines: list[Engine], sizes: tuple[int, int], runs: int) -> None:
    low, high = sizes
    print(
        f"\nOverhead per task (one workflow, one step): sessions of {low} and {high} tasks, "
        f"each task one model round (complete); engines interleaved, median of {runs}; "
        f"ms from the main agent's first model call to its last"
    )
    for shape in SHAPES:
        times: dict[tuple[str, int], list[Times]] = {}
        for engine in engines:
            run(engine, Work(2, shape=shape))  # warm-up: imports, DBOS's first launch, caches
        for _ in range(runs):
            for tasks in sizes:
                for engine in engines:
                    work = Work(tasks, shape=shape)
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
            verdict = "met" if added <= TARGET_MS else "NOT met"
            print(
                f"  {shape:<8} {engine.kind:<8} overhead {added:.2f} ms per task wall "
                f"({cpu - local[1]:.2f} CPU); dbos / local {wall / local[0]:.1f} wall, "
                f"{cpu / local[1]:.1f} CPU; target <= {TARGET_MS:g} ms: {verdict}"
            )


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


def w3_on_workers(workers: int) -> None:
    """W3 with the session in this process and its tasks run by `workers` worker
    processes on Postgres. Not measurable yet: there is no `orchestrator worker` (issue
    26, Build 6). When there is, start `workers` processes (`orchestrator worker --engine
    dbos --database-url URL`) on the Postgres of this run before the session, drive the
    same W3 session with the engine's queue, and report the wall time against the
    in-process run's; stop the workers after."""
    print(f"  on {workers} worker process(es): not measured yet (no `orchestrator worker`)")


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, under a minute")
    parser.add_argument("--runs", type=int, help="runs per engine and size (5; --quick 3)")
    parser.add_argument("--tasks", type=int, nargs=2, metavar=("N1", "N2"), help="(10 50)")
    parser.add_argument("--w3", type=int, metavar="N", help="W3's subagents (1000; --quick 50)")
    parser.add_argument("--w3-runs", type=int, help="W3's runs per engine (3; --quick 1)")
    parser.add_argument("--latency", type=float, default=0.05, help="W3's seconds per model call")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2], help="(not built)")
    args = parser.parse_args(argv)
    try:
        require_dbos()
    except ConfigError as exc:
        sys.exit(str(exc))
    low, high = args.tasks or ((2, 8) if args.quick else (10, 50))
    runs = args.runs or (3 if args.quick else 5)
    print(_machine())
    with ExitStack() as stack:
        engines = list(_engines(stack, not args.no_postgres))
        overhead(engines, (low, high), runs)
        w3(
            engines,
            args.w3 or (50 if args.quick else 1000),
            args.latency,
            args.w3_runs or (1 if args.quick else 3),
        )
        for workers in args.workers:
            w3_on_workers(workers)
    print(f"\nload average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
