"""Subagents at work (issue 10: W1 and W3): what the team costs per model round, and how
it scales to a thousand concurrent subagents.

    .venv/bin/python tests/benchmarks/bench_team.py [--quick] [--profile]
        [--repeats N] [--modes memory off batch]

The model is scripted and answers at once (`ScriptedModel` over a Python responder), so
what is timed is the orchestration: the turn loop, the team, the mailbox, the task
registry, the fold and the journal. Subagents are of a role defined in code, `bench`,
whose one workspace tool is `fixed` (read-only, returns 200 bytes, as in `shape.py`);
each is delegated with an empty write scope (it writes nothing). A subagent's round is
one model call: every round but its last calls `fixed`, the last calls `complete`. Each
call of `fixed` names its round (`{"n": 3}`): the same call three times in a row is a
loop, which the assessment stops. The
main agent delegates every task in one reply, calls `wait_tasks`, then answers. Wall
time, CPU time (of the whole process, the journal's writer thread included: other work
on a shared machine moves it less) and the time spent in the cyclic garbage collector
are printed for each run.

- **W1**: the main agent and 8 subagents of 20 rounds each, a real session on disk
  (`create_session` / `open_session` / `drive`) with the journal's `batch` policy: the
  time of `drive` over the model rounds of all agents, the median of 5 runs (target
  < 0.5 ms/round). Each run is paired with the same machinery driving the main agent
  alone through 160 rounds of `fixed`, and the ratio of the two medians is printed, so
  that noise on a shared machine cancels. The same pair is then run without a journal
  (a `MemorySession`, the team driven by `open_team` / `run_main`).
- **W3**: 1,000 concurrent subagents of 5 rounds (`Limits(max_live=1000,
  max_model_calls=1000)`), with no journal (`memory`: a `MemorySession`) and with the
  journal on (`off` and `batch`: a session on disk driven by `drive`). Each run is a
  fresh process (its peak RSS, `VmHWM`, is its own), after a warm-up of 2 subagents in
  that process: the time of the run, peak RSS, and the cost per subagent at 100, 250,
  500 and 1,000 subagents with its ratio 1000/100 (flat: about 1). The median of
  `--repeats` runs (3). Targets without a journal: < 2 s, < 150 MB.

`--quick`: 3 runs of W1, and W3 at 100 and 1,000 subagents only, once each.
`--profile`: instead, cProfile one W1 run, the no-journal W3 run at 1,000 subagents, and
with the collector off the no-journal W3 runs at 100 and 1,000 and the `off` ones at 100
and 300; print the top cumulative functions of `orchestrator/`, and those whose own time
per call grows with the number of subagents (a scan over every task or message).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from orchestrator.messages import SystemMessage, UserMessage  # noqa: E402
from orchestrator.models.base import ModelRequest  # noqa: E402
from orchestrator.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply  # noqa: E402
from orchestrator.session.live import MemorySession, open_session  # noqa: E402
from orchestrator.state.events import AgentStarted  # noqa: E402
from orchestrator.state.settings import SessionSettings  # noqa: E402
from orchestrator.store import Durability  # noqa: E402
from orchestrator.team.definitions import AgentDefinition, Definitions  # noqa: E402
from orchestrator.team.drive import RunSettings, drive  # noqa: E402
from orchestrator.team.main_agent import open_team, run_main  # noqa: E402
from orchestrator.team.queries import MAIN  # noqa: E402
from orchestrator.team.settings import Seat  # noqa: E402
from orchestrator.tools import ToolRegistry, Workspace, approve_all  # noqa: E402
from tests.benchmarks.shape import Fixed as _Fixed  # noqa: E402
from tests.benchmarks.shape import bench_session, bench_settings  # noqa: E402

BENCH = AgentDefinition(
    name="bench",
    description="Calls `fixed` a number of times, then completes.",
    prompt="You are a benchmark subagent: call fixed until told otherwise, then complete.",
    tools=("fixed",),
)
DEFINITIONS = Definitions([BENCH])


class Round(BaseModel):
    n: int = 0


class Fixed(_Fixed):
    """`shape.Fixed`, called with the round's number: a call that differs each round."""

    args_model = Round  # type: ignore[assignment]


def _fixed(step: int) -> ScriptedReply:
    return ScriptedReply(tool_calls=(ScriptedCall(name="fixed", arguments={"n": step}),))


W1_TASKS, W1_ROUNDS, W1_ALONE = 8, 20, 160
W3_ROUNDS = 5
W3_SIZES = (100, 250, 500, 1000)
MODES = ("memory", "off", "batch")  # memory: no journal at all (a MemorySession)


class Brain:
    """The scripted model's responder: the main agent delegates `tasks` tasks in one reply,
    waits for them and answers (or, with no tasks, calls `fixed` `alone` times); every
    subagent calls `fixed` in each of its `rounds` rounds but the last, which completes.
    Counts the model calls."""

    def __init__(self, tasks: int, rounds: int, alone: int = 0) -> None:
        self.tasks, self.rounds, self.alone = tasks, rounds, alone
        self.calls = 0

    def __call__(self, request: ModelRequest) -> ScriptedReply:
        self.calls += 1
        if request.agent != MAIN:
            if request.step < self.rounds - 1:
                return _fixed(request.step)
            return _call("complete", summary=f"{request.agent} done")
        if not self.tasks:
            if request.step < self.alone:
                return _fixed(request.step)
            return ScriptedReply(text="done")
        if request.step == 0:
            delegates = [
                ScriptedCall(
                    name="delegate",
                    arguments={
                        "description": f"job {i}",
                        "prompt": "call fixed, then complete",
                        "agent_type": "bench",
                        "write_scope": [],
                    },
                )
                for i in range(self.tasks)
            ]
            return ScriptedReply(tool_calls=tuple(delegates))
        if request.step == 1:
            return _call("wait_tasks", timeout=600)
        return ScriptedReply(text="all done")


def _call(name: str, **arguments: Any) -> ScriptedReply:
    return ScriptedReply(tool_calls=(ScriptedCall(name=name, arguments=arguments),))


class Timing:
    """Wall time, CPU time of the process (all its threads: the journal's writer too),
    and time in the cyclic garbage collector, over a `with` block."""

    def __init__(self) -> None:
        self.wall = self.cpu = self.gc = 0.0
        self._gc_start = 0.0

    def __enter__(self) -> Timing:
        gc.callbacks.append(self._on_gc)
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu
        gc.callbacks.remove(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_start = time.process_time()
        else:
            self.gc += time.process_time() - self._gc_start


def _session(brain: Brain) -> SessionSettings:
    return SessionSettings(
        max_rounds=brain.alone + 3,
        max_live=max(brain.tasks, 8),
        max_model_calls=max(brain.tasks, 16),
    )


async def run_on_disk(root: Path, brain: Brain, durability: Durability) -> Timing:
    """A real session: made, opened and driven; returns the times of `drive`."""
    session_id, _ = bench_session(root)
    settings = bench_settings(
        brain, tools=ToolRegistry([Fixed()]), definitions=DEFINITIONS, session=_session(brain)
    )
    async with open_session(root, session_id, durability=durability, warn=print) as live:
        with Timing() as timing:
            result = await drive(live, settings)
        _check(live.state, brain.tasks, result.status)
    return timing


async def run_in_memory(root: Path, brain: Brain) -> Timing:
    """The team over a `MemorySession` (no journal); returns the times of the run."""
    session = MemorySession()
    model = ScriptedModel(brain, name="scripted:bench")
    run = RunSettings(
        model=model,
        tools=ToolRegistry([Fixed()]),
        definitions=DEFINITIONS,
        approve_for=lambda agent, who: approve_all,
    )
    seat = Seat(workspace=Workspace(root), settings=_session(brain))
    with Timing() as timing:
        messages = (SystemMessage(content="main"), UserMessage(content="bench"))
        await session.emit(AgentStarted(agent=MAIN, role="main", messages=messages))
        async with open_team(session, session, run, seat) as team:
            outcome = await run_main(team)
    _check(session.state, brain.tasks, outcome.reason)
    return timing


def _check(state: Any, tasks: int, status: str) -> None:
    assert status == "completed", status
    states = [t.state for t in state.tasks.tasks.values()]
    assert states == ["completed"] * tasks, states
    # Every message delivered and needing nothing more: none is kept (the mailbox's bound).
    assert not state.mailbox.messages, list(state.mailbox.messages)
    assert state.mailbox.posted_count == tasks


def run_once(mode: str, brain: Brain) -> Timing:
    """One run in a fresh temporary directory; the times it reports."""
    root = Path(tempfile.mkdtemp(prefix="bench-team-"))
    try:
        if mode == "memory":
            return trio.run(run_in_memory, root, brain)
        return trio.run(run_on_disk, root, brain, Durability(mode))
    finally:
        shutil.rmtree(root)


# --- W1 ---------------------------------------------------------------------------------


def w1(runs: int) -> None:
    """The team and the main agent alone, interleaved, with `batch` and without a
    journal; per model round: wall and CPU time, medians."""
    for mode in ("batch", "memory"):
        run_once(mode, Brain(W1_TASKS, W1_ROUNDS))  # warm-up: imports, schemas, caches
        run_once(mode, Brain(0, 0, W1_ALONE))
        team: list[tuple[float, float]] = []
        alone: list[tuple[float, float]] = []
        calls = [0, 0]
        for _ in range(runs):
            for brain, into, i in (
                (Brain(W1_TASKS, W1_ROUNDS), team, 0),
                (Brain(0, 0, W1_ALONE), alone, 1),
            ):
                timing = run_once(mode, brain)
                into.append((timing.wall * 1000 / brain.calls, timing.cpu * 1000 / brain.calls))
                calls[i] = brain.calls
        for what, rows, count in (
            (f"main + {W1_TASKS} subagents x {W1_ROUNDS} rounds", team, calls[0]),
            (f"main alone, {W1_ALONE} rounds", alone, calls[1]),
        ):
            print(
                f"W1  {mode:<6} {what}: {_median(rows, 0):.3f} ms/round wall, "
                f"{_median(rows, 1):.3f} ms/round CPU (median of {runs}; wall "
                f"{', '.join(f'{r[0]:.3f}' for r in rows)}; {count} model rounds)"
            )
        print(
            f"W1  {mode:<6} team / alone: {_median(team, 0) / _median(alone, 0):.2f} wall, "
            f"{_median(team, 1) / _median(alone, 1):.2f} CPU"
        )


def _median(rows: list[tuple[float, float]], index: int) -> float:
    return statistics.median(r[index] for r in rows)


# --- W3 ---------------------------------------------------------------------------------


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def w3_child(mode: str, tasks: int) -> None:
    """One configuration in this (fresh) process; prints its figures as JSON."""
    run_once(mode, Brain(2, W3_ROUNDS))  # warm-up
    gc.collect()
    rss_before = _status_kb("VmRSS")
    brain = Brain(tasks, W3_ROUNDS)
    timing = run_once(mode, brain)
    figures = {
        "wall": timing.wall,
        "cpu": timing.cpu,
        "gc": timing.gc,
        "rss_before_kb": rss_before,
        "hwm_kb": _status_kb("VmHWM"),
        "calls": brain.calls,
    }
    print(json.dumps(figures))


def w3(sizes: tuple[int, ...], repeats: int, modes: tuple[str, ...]) -> None:
    print(
        f"W3  subagents x {W3_ROUNDS} rounds; a fresh process per run; "
        f"median of {repeats} runs; peak RSS the highest"
    )
    for mode in modes:
        per_subagent: dict[int, tuple[float, float]] = {}
        for tasks in sizes:
            runs = [_spawn(mode, tasks) for _ in range(repeats)]
            wall, cpu, in_gc = (
                statistics.median(r[k] for r in runs) for k in ("wall", "cpu", "gc")
            )
            hwm = max(r["hwm_kb"] for r in runs) / 1024
            before = statistics.median(r["rss_before_kb"] for r in runs) / 1024
            per_subagent[tasks] = (wall / tasks, cpu / tasks)
            print(
                f"W3  {mode:<6} {tasks:>5} subagents: wall {wall:7.3f} s, CPU {cpu:7.3f} s "
                f"(GC {in_gc:6.3f} s), peak RSS {hwm:6.1f} MB (before the run {before:5.1f} "
                f"MB); per subagent {wall * 1000 / tasks:6.3f} ms wall, "
                f"{cpu * 1000 / tasks:6.3f} ms CPU ({runs[0]['calls']} model rounds)"
            )
        low, high = min(sizes), max(sizes)
        print(
            f"W3  {mode:<6} cost per subagent, {high} over {low}: "
            f"{per_subagent[high][0] / per_subagent[low][0]:.2f} wall, "
            f"{per_subagent[high][1] / per_subagent[low][1]:.2f} CPU"
        )


def _spawn(mode: str, tasks: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--w3-child", mode, str(tasks)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    figures: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return figures


# --- profile ----------------------------------------------------------------------------

Row = tuple[str, int, float, float]  # where, calls, own time, cumulative time


def profiled(mode: str, brain: Brain, *, collect: bool = True) -> list[Row]:
    """One run under cProfile (its wall-clock timer: a CPU-time timer costs a system call
    per event and distorts more than it corrects); the rows of orchestrator/'s functions."""
    profile = cProfile.Profile()
    if not collect:
        gc.disable()
    try:
        profile.runcall(run_once, mode, brain)
    finally:
        gc.enable()
    rows = []
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    for (filename, line, name), (_, calls, own, cumulative, _) in stats.items():
        if "/orchestrator/" in filename:
            where = filename.rsplit("/orchestrator/", 1)[1]
            rows.append((f"orchestrator/{where}:{line} {name}", calls, own, cumulative))
    return rows


def _top(title: str, rows: list[Row], count: int = 10) -> None:
    print(f"\n{title}: top {count} cumulative in orchestrator/ (under cProfile)")
    for where, calls, own, cumulative in sorted(rows, key=lambda r: r[3], reverse=True)[:count]:
        print(f"  {cumulative:7.3f} s cum  {own:7.3f} s own  {calls:>8} calls  {where}")


def _growth(title: str, small: list[Row], large: list[Row], factor: float) -> None:
    """Functions whose own time per call grows with the number of subagents: each call
    walks something that grows (all tasks, all messages)."""
    print(f"\n{title}: own time per call, large over small (>= 3x, >= 10 ms own in all)")
    before = {r[0]: r for r in small}
    found = []
    for where, calls, own, _ in large:
        old = before.get(where)
        if old is None or calls < 10 or old[1] == 0 or old[2] <= 0 or own < 0.01:
            continue
        growth = (own / calls) / (old[2] / old[1])
        if growth >= 3:
            found.append((own, growth, calls, old[1], where))
    for own, growth, calls, old_calls, where in sorted(found, reverse=True):
        print(
            f"  {growth:6.1f}x per call  {own:7.3f} s own  {old_calls:>7} -> {calls:>7} "
            f"calls ({calls / old_calls:.1f}x, subagents {factor:.0f}x)  {where}"
        )


def profile_runs() -> None:
    run_once("memory", Brain(2, W3_ROUNDS))  # warm-up
    run_once("batch", Brain(2, W3_ROUNDS))
    _top(
        f"W1 (batch, main + {W1_TASKS} x {W1_ROUNDS})",
        profiled("batch", Brain(W1_TASKS, W1_ROUNDS)),
    )
    _top(f"W3 (no journal, 1000 x {W3_ROUNDS})", profiled("memory", Brain(1000, W3_ROUNDS)))
    # The growth is read with the collector off: its full passes, which look at every
    # live object, land on whatever function runs then (its own cost is printed by W3).
    small = profiled("memory", Brain(100, W3_ROUNDS), collect=False)
    large = profiled("memory", Brain(1000, W3_ROUNDS), collect=False)
    _growth("W3 (no journal, 100 -> 1000 subagents, collector off)", small, large, 10)
    small = profiled("off", Brain(100, W3_ROUNDS), collect=False)
    large = profiled("off", Brain(300, W3_ROUNDS), collect=False)
    _top(f"W3 (journal off, 300 x {W3_ROUNDS}, collector off)", large)
    _growth("W3 (journal off, 100 -> 300 subagents, collector off)", small, large, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--repeats", type=int, help="W3's runs per configuration")
    parser.add_argument(
        "--modes", nargs="+", default=list(MODES), choices=MODES, help="W3's configurations"
    )
    parser.add_argument("--w1-runs", type=int, help="W1's runs (5; --quick 3)")
    parser.add_argument("--sizes", type=int, nargs="+", help="W3's numbers of subagents")
    parser.add_argument("--w3-child", nargs=2, metavar=("MODE", "TASKS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.w3_child:
        w3_child(args.w3_child[0], int(args.w3_child[1]))
        return
    if args.profile:
        profile_runs()
        return
    print(
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{platform.system()} {platform.release()}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs"
    )
    w1(args.w1_runs or (3 if args.quick else 5))
    repeats = args.repeats or (1 if args.quick else 3)
    sizes = args.sizes or ((100, 1000) if args.quick else W3_SIZES)
    w3(tuple(sizes), repeats, tuple(args.modes))


if __name__ == "__main__":
    main()
