"""This checkout against another (before and after a change), measured alternately in
one run: A B A B, so that both see the same machine at the same moments.

    git worktree add /tmp/before COMMIT
    .venv/bin/python tests/benchmarks/bench_ab.py --before /tmp/before [--runs 5]

Each sample runs a tree's own benchmark code (its `tests/benchmarks/`) in a fresh
interpreter with the tree first on `sys.path`:

- **W1**: `bench_team.w1(1)` (`--w1-runs N`: `w1(N)`, the median of N), the main agent
  and 8 subagents of 20 rounds on a real session (`batch` journal): ms per model round,
  wall.
- **W3**: `bench_team.py --w3-child memory 1000`: 1,000 concurrent subagents of 5
  rounds, no journal: wall seconds and peak RSS.
- **load/floor**: `bench_load.py --messages 100000 --runs 1`: loading a session of
  100,000 messages over the plain parse of its journal's lines, in one process.
- **rounds**: `bench_rounds.py --rounds 1000 --policies batch`: one agent's overall ms
  per round (a tool call and its result), a real session with the `batch` journal.
- **warm**: the same session's rounds in a process that ran a 20-round session first
  (imports done, caches filled): wall and CPU ms per round from its first reply to its
  last, so without the session's making, opening and closing (issue 36's per-round
  figure; `rounds` above is of the process's first session, its making included).
- **demo**: `orchestrator demo --no-crash --json` in a fresh directory, as the script
  runs it (`main()`, the process's own command): the wall seconds of the whole command
  (its interpreter's start included).

Printed per figure: each tree's median, and after / before (the target of a
restructuring: at most 1.10; issue 36 asks 1.05). Start-up (`--help`, `sessions show`) has its own
interleaved comparison: `bench_startup.py --tree /tmp/before`.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRELUDE = "import sys, runpy; sys.path.insert(0, sys.argv.pop(1)); "


def run(tree: Path, code: str, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + code, str(tree), *args],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def w1(tree: Path, sizes: argparse.Namespace) -> dict[str, float]:
    out = run(tree, f"from tests.benchmarks import bench_team; bench_team.w1({sizes.w1_runs})")
    line = next(x for x in out.splitlines() if x.startswith("W1  batch") and "subagents" in x)
    figure = re.search(r"([\d.]+) ms/round wall", line)
    assert figure is not None, out
    return {"W1 ms/round": float(figure[1])}


def w3(tree: Path, tasks: int) -> dict[str, float]:
    script = str(tree / "tests" / "benchmarks" / "bench_team.py")
    code = (
        "sys.argv = [sys.argv[0], *sys.argv[1:]]; runpy.run_path(sys.argv[1], run_name='__main__')"
    )
    out = run(tree, code.replace("sys.argv[1]", repr(script)), "--w3-child", "memory", str(tasks))
    figures = json.loads(out.strip().splitlines()[-1])
    return {"W3 wall s": figures["wall"], "W3 peak RSS MB": figures["hwm_kb"] / 1024}


def load(tree: Path, messages: int) -> dict[str, float]:
    code = (
        f"sys.argv = ['bench_load', '--messages', '{messages}', '--runs', '1']; "
        "runpy.run_module('tests.benchmarks.bench_load', run_name='__main__')"
    )
    out = run(tree, code)
    ratio = re.search(r"load\s+([\d.]+) ms, floor\s+([\d.]+) ms, ratio ([\d.]+)", out)
    assert ratio is not None, out
    size = f"{messages // 1000}k" if messages >= 1000 else str(messages)
    return {f"load ms ({size})": float(ratio[1]), f"load/floor ({size})": float(ratio[3])}


def rounds(tree: Path, count: int) -> dict[str, float]:
    code = (
        f"sys.argv = ['bench_rounds', '--rounds', '{count}', '--policies', 'batch']; "
        "runpy.run_module('tests.benchmarks.bench_rounds', run_name='__main__')"
    )
    figure = re.search(r"overall\s+([\d.]+) ms/round", run(tree, code))
    assert figure is not None
    return {"rounds ms/round": float(figure[1])}


WARM = """
import pathlib, shutil, tempfile
import trio
from orchestrator.store import Durability
from tests.benchmarks.shape import RoundClock, run_session

def session(rounds, clock):
    root = tempfile.mkdtemp(prefix="bench-ab-warm-")
    try:
        trio.run(run_session, pathlib.Path(root), rounds, Durability.BATCH, clock)
    finally:
        shutil.rmtree(root)

session(20, RoundClock())
clock = RoundClock()
session({count}, clock)
rounds = len(clock.marks) - 1  # from the first reply to the last: no making, no opening
wall = (clock.marks[-1] - clock.marks[0]) * 1000 / rounds
cpu = (clock.cpu_marks[-1] - clock.cpu_marks[0]) * 1000 / rounds
print(f"warm {{wall:.4f}} {{cpu:.4f}}")
"""


def warm(tree: Path, count: int) -> dict[str, float]:
    """ms per round, wall and CPU, of a process's second session (its first warmed up)."""
    out = run(tree, WARM.format(count=count))
    figure = re.search(r"warm ([\d.]+) ([\d.]+)", out)
    assert figure is not None, out
    return {"warm ms/round": float(figure[1]), "warm CPU ms/round": float(figure[2])}


def demo(tree: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-ab-demo-") as work:
        where = Path(work)
        # `main()` reads its command line, as the `orchestrator` script runs it: the
        # process's own command, with its collector's setting (`main([...])` keeps the
        # caller's, as a program's call should).
        code = "from orchestrator.cli import main; sys.exit(main())"
        start = time.perf_counter()
        run(
            tree,
            code,
            "demo",
            "--no-crash",
            "--json",
            "--sessions-dir",
            str(where / "s"),
            "-w",
            str(where / "w"),
        )
        return {"demo wall s": time.perf_counter() - start}


BENCHES: tuple[Callable[[Path, argparse.Namespace], dict[str, float]], ...] = (
    w1,
    lambda tree, sizes: w3(tree, sizes.w3),
    lambda tree, sizes: load(tree, sizes.messages),
    lambda tree, sizes: rounds(tree, sizes.rounds),
    lambda tree, sizes: warm(tree, sizes.rounds),
    lambda tree, sizes: demo(tree),
)
NAMES = ("w1", "w3", "load", "rounds", "warm", "demo")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=ROOT)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=NAMES, action="append")
    parser.add_argument(
        "--w1-runs",
        type=int,
        default=1,
        help="W1's team runs in each sample, the median taken (1: a collector's full pass "
        "that falls in the one run is all of that sample's; more: it is one run's of those)",
    )
    parser.add_argument("--w3", type=int, default=1000, help="W3's subagents (1000)")
    parser.add_argument("--messages", type=int, default=100_000, help="load's (100000)")
    parser.add_argument("--rounds", type=int, default=1000, help="rounds' and warm's (1000)")
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    samples: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    benches = [b for b, n in zip(BENCHES, NAMES, strict=True) if not args.only or n in args.only]
    for n in range(args.runs):
        for bench in benches:
            for name, tree in trees.items():  # A B, then A B again next round
                for figure, value in bench(tree, args).items():
                    samples[name].setdefault(figure, []).append(value)
        print(f"round {n + 1}/{args.runs} done", file=sys.stderr, flush=True)
    print(
        f"{'figure':<20} {'before':>10} {'after':>10} {'after/before':>13}"
        f"   (medians of {args.runs})"
    )
    for figure, before in samples["before"].items():
        after = samples["after"][figure]
        b, a = statistics.median(before), statistics.median(after)
        print(f"{figure:<20} {b:>10.3f} {a:>10.3f} {a / b:>13.2f}")


if __name__ == "__main__":
    main()
