"""Start-up time of the command line (issue 7): `--help`, `sessions list`, `sessions show`.

    .venv/bin/python tests/benchmarks/bench_startup.py [--runs 10] [--tree DIR]

Each command runs `--runs` times in a fresh interpreter; the figure is the median wall
time. `sessions list` runs over a sessions root holding a recorded session, `sessions
show` on it. `--tree DIR` (repeatable) times other checkouts of the code too (say an
older commit, made with `git worktree add DIR COMMIT`): their runs are interleaved with
this checkout's, so a before/after comparison sees the same machine at the same moments.
Run it with this checkout's interpreter.
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


def timed(tree: Path, args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", LAUNCH, str(tree), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tree", type=Path, action="append", default=[])
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
        python = statistics.median([_time([sys.executable, "-c", "pass"]) for _ in range(5)])
        print(f"python -c pass: {python * 1000:.0f} ms (the interpreter alone)")
        print(f"{'command':<16}" + "".join(f"{t!s:>28}" for t in trees))
        for name, command in (
            ("--help", ["--help"]),
            ("sessions list", ["sessions", "list"]),
            ("sessions show", ["sessions", "show", session]),
        ):
            times: list[list[float]] = [[] for _ in trees]
            for _ in range(args.runs):
                for number, tree in enumerate(trees):
                    extra = [] if name == "--help" else ["--sessions-dir", str(roots[number])]
                    times[number].append(timed(tree, command + extra))
            medians = [statistics.median(t) * 1000 for t in times]
            print(f"{name:<16}" + "".join(f"{m:>25.0f} ms" for m in medians))
        many = _many_sessions(work / "many", recorded)
        listed = statistics.median(
            [timed(ROOT, ["sessions", "list", "--sessions-dir", str(many)]) for _ in range(5)]
        )
        print(
            f"sessions list over 1,000 sessions, one with a 100,000-file workspace: "
            f"{listed * 1000:.0f} ms (this checkout)"
        )
    finally:
        shutil.rmtree(work)


def _many_sessions(root: Path, recorded: Path) -> Path:
    """1,000 copies of a recorded session (ids made unique), the first with a workspace
    inside it of 100,000 files, which listing must not walk."""
    [source] = list(recorded.iterdir())
    root.mkdir()
    for number in range(1000):
        target = root / f"{source.name[:-6]}{number:06x}"
        shutil.copytree(source, target)
    workspace = next(iter(sorted(root.iterdir()))) / "workspace"
    for number in range(100):
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
