"""Start-up time of the command line (issue 7): `--help`, `sessions list`, `sessions show`.

    .venv/bin/python tests/benchmarks/bench_startup.py [--runs 10] [--tree DIR]

Each command runs `--runs` times in a fresh interpreter; the figures are the median wall
time and the median CPU time of the process (which other work on a shared machine moves
less). `sessions list` runs over a sessions root holding a recorded session, `sessions
show` on it; `show (snapshot)` on a session each tree's own demo made, which ended
cleanly, so its snapshot covers its journal. `--tree DIR` (repeatable) times other
checkouts of the code too (say an older commit, made with `git worktree add DIR
COMMIT`): their runs are interleaved with this checkout's, so a before/after comparison
sees the same machine at the same moments, and the last column is this checkout's
medians over each other tree's. Run it with this checkout's interpreter.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# `main()` reads the command line, as the `orchestrator` script runs it: the process's
# own command, with what only that does (its collector's setting, httpx's command-line
# client left unloaded); `main([...])` is a program's call and keeps the program's.
LAUNCH = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from orchestrator.cli import main; sys.exit(main())"
)


def timed(tree: Path, args: list[str]) -> float:
    return timed_cpu(tree, args)[0]


def timed_cpu(tree: Path, args: list[str], *, check: bool = True) -> tuple[float, float]:
    """(wall, CPU) seconds of one run in a fresh interpreter."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", LAUNCH, str(tree), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=check,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tree", type=Path, action="append", default=[])
    # The listing of many sessions, one with a large workspace (smaller: the suite's run).
    parser.add_argument("--many", type=int, default=1000, help="sessions listed (1000)")
    parser.add_argument("--files", type=int, default=100, help="thousands of files (100)")
    args = parser.parse_args()
    trees = [ROOT, *args.tree]
    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        # The oldest format every tree reads: format 1 (older trees cannot read newer).
        recorded = ROOT / "sessions" / "v1-completed"
        roots = []
        for number, tree in enumerate(trees):
            root = work / f"sessions-{number}"
            shutil.copytree(recorded, root)
            roots.append(root)
            # Migrate once if this tree wants to, outside the timing.
            [session] = [p.name for p in root.iterdir()]
            timed(tree, ["sessions", "show", session, "--sessions-dir", str(root)])
        # Each tree shows a demo session it made itself, which ended cleanly: its snapshot
        # (of that tree's layout) covers its journal.
        demo_roots: list[tuple[Path, str]] = []
        for number, tree in enumerate(trees):
            root, ws = work / f"demo-{number}", work / f"ws-{number}"
            timed(tree, ["demo", "--no-crash", "--sessions-dir", str(root), "-w", str(ws)])
            [shown] = [p.name for p in root.iterdir()]
            demo_roots.append((root, shown))
        python = statistics.median([_time([sys.executable, "-c", "pass"]) for _ in range(5)])
        print(f"python -c pass: {python * 1000:.0f} ms (the interpreter alone)")
        print("median wall / CPU ms, fresh interpreter each run")
        print(
            f"{'command':<24}"
            + "".join(f"{t!s:>28}" for t in trees)
            + "  this / each other (wall, CPU)"
        )
        for name, command in (
            ("--help", ["--help"]),
            ("sessions list", ["sessions", "list"]),
            ("sessions show", ["sessions", "show", session]),
            ("sessions show (snapshot)", ["sessions", "show"]),
        ):
            walls: list[list[float]] = [[] for _ in trees]
            cpus: list[list[float]] = [[] for _ in trees]
            for _ in range(args.runs):
                for number, tree in enumerate(trees):
                    if "snapshot" in name:
                        root_of, own = demo_roots[number]
                        extra = [own, "--sessions-dir", str(root_of)]
                    else:
                        extra = [] if name == "--help" else ["--sessions-dir", str(roots[number])]
                    wall, cpu = timed_cpu(tree, command + extra)
                    walls[number].append(wall)
                    cpus[number].append(cpu)
            cells: list[str] = []
            medians: list[tuple[float, float] | None] = []
            for wall_times, cpu_times in zip(walls, cpus, strict=True):
                if not wall_times:
                    cells.append(f"{'-':>28}")
                    medians.append(None)
                    continue
                wall, cpu = statistics.median(wall_times), statistics.median(cpu_times)
                medians.append((wall, cpu))
                cells.append(f"{wall * 1000:>17.0f} / {cpu * 1000:>4.0f} ms")
            mine = medians[0]
            ratios = [
                f"{mine[0] / other[0]:.2f}, {mine[1] / other[1]:.2f}" if mine and other else "-"
                for other in medians[1:]
            ]
            print(f"{name:<24}" + "".join(cells) + "  " + " | ".join(ratios))
        many = _many_sessions(work / "many", recorded, args.many, args.files)
        listed = statistics.median(
            [timed(ROOT, ["sessions", "list", "--sessions-dir", str(many)]) for _ in range(5)]
        )
        print(
            f"sessions list over {args.many:,} sessions, one with a "
            f"{args.files * 1000:,}-file workspace: "
            f"{listed * 1000:.0f} ms (this checkout)"
        )
    finally:
        shutil.rmtree(work)


def _many_sessions(root: Path, recorded: Path, sessions: int, thousands: int) -> Path:
    """`sessions` copies of a recorded session (ids made unique), the first with a
    workspace inside it of `thousands` times 1,000 files, which listing must not walk."""
    [source] = list(recorded.iterdir())
    root.mkdir()
    for number in range(sessions):
        target = root / f"{source.name[:-6]}{number:06x}"
        shutil.copytree(source, target)
    workspace = next(iter(sorted(root.iterdir()))) / "workspace"
    for number in range(thousands):
        directory = workspace / f"d{number}"
        directory.mkdir()
        for item in range(1000):
            (directory / f"f{item}").touch()
    return root


def _time(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
