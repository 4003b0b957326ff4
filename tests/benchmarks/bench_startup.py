"""Start-up time of the command line (issue 7): `--help`, `sessions list`, `sessions show`.

    .venv/bin/python tests/benchmarks/bench_startup.py [--runs 10] [--tree DIR]

Each command runs `--runs` times in a fresh interpreter; the figure is the median wall
time. `sessions list` runs over a sessions root holding the recorded sessions, `sessions
show` on the recorded finished one. `--tree DIR` times another checkout of the code (say
an older commit, made with `git worktree add DIR COMMIT`), for a before/after comparison
on the same machine in the same minute; run it with this checkout's interpreter.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from orchestrator.cli import main; sys.exit(main(sys.argv[1:]))"
)


def timed(tree: Path, args: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", LAUNCH, str(tree), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tree", type=Path, default=ROOT)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        recorded = sorted((args.tree / "sessions").glob("v*-completed"))[-1]
        shutil.copytree(recorded, work / "sessions")
        [session] = [p.name for p in (work / "sessions").iterdir()]
        root = ["--sessions-dir", str(work / "sessions")]
        python = statistics.median(
            [_time([sys.executable, "-c", "pass"]) for _ in range(args.runs)]
        )
        print(f"tree {args.tree}")
        print(f"  python -c pass      {python * 1000:6.0f} ms (the interpreter alone)")
        for name, command in (
            ("--help", ["--help"]),
            ("sessions list", ["sessions", "list", *root]),
            ("sessions show", ["sessions", "show", session, *root]),
        ):
            print(f"  {name:<19} {timed(args.tree, command, args.runs) * 1000:6.0f} ms")
    finally:
        shutil.rmtree(work)


def _time(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
