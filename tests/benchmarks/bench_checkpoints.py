"""What workspace checkpoints cost (session/shadow.py), and a fork against a load.

    .venv/bin/python -m tests.benchmarks.bench_checkpoints [--files 10000] [--mb 200]
        [--runs 5] [--records 100000]

On a workspace of `--files` files holding `--mb` MB in all (100 directories), prints the
median of `--runs` of: the first checkpoint (every file stored); a checkpoint after a
file tool (its one path known) when that file changed, when nothing changed and when it
made a new file, each made in-process and by git's path (a second store over the same
workspace, in turns: A B, B A); one after a shell call that follows a file tool's (the
index brought up to the in-process tree first, against git's path); one after a shell
call (the whole workspace scanned by git) when nothing changed and when one file
changed; next to them, one scan of the shell's change check (tools/watch.py), which a
subagent's command pays twice already; and restoring a checkpoint one file away.
Then, on a session of about `--records` journal records made by a real run (shape.py),
the time `fork` takes (at its last record, files left alone) and `load_state` takes.
Not a test (pytest does not collect `bench_*.py`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import trio

from orchestrator.session.fork import fork
from orchestrator.session.live import load_state
from orchestrator.session.shadow import Shadow
from orchestrator.store import Durability, scan_journal
from orchestrator.tools.watch import file_states
from tests.benchmarks.shape import run_session


def make_workspace(root: Path, files: int, megabytes: int) -> None:
    size = megabytes * 1024 * 1024 // files
    for n in range(files):
        directory = root / f"d{n % 100:02}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"f{n}.txt").write_bytes(os.urandom(size // 2).hex().encode()[:size])


def median_ms(runs: int, setup: Callable[[int], None], timed: Callable[[], object]) -> float:
    taken = []
    for n in range(runs):
        setup(n)
        start = time.perf_counter()
        timed()
        taken.append((time.perf_counter() - start) * 1000)
    return statistics.median(taken)


def paired_ms(
    runs: int, setup: Callable[[int], None], a: Callable[[], object], b: Callable[[], object]
) -> tuple[float, float]:
    """Medians of `a` and `b`, each run after the same `setup`, in turns (A B, then B A)."""
    taken: dict[int, list[float]] = {0: [], 1: []}
    for n in range(runs):
        for which in (0, 1) if n % 2 == 0 else (1, 0):
            setup(n)
            start = time.perf_counter()
            (a, b)[which]()
            taken[which].append((time.perf_counter() - start) * 1000)
    return statistics.median(taken[0]), statistics.median(taken[1])


def checkpoints(files: int, megabytes: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws, store = Path(tmp) / "ws", Path(tmp) / "session" / "files"
        store.parent.mkdir()
        make_workspace(ws, files, megabytes)
        shadow = Shadow(store, ws)
        start = time.perf_counter()
        first = shadow.capture()
        print(f"workspace: {files} files, {megabytes} MB")
        print(f"first checkpoint (every file stored)      {(time.perf_counter() - start):8.2f} s")
        # git's path beside it: a second store over the same workspace, whose `Shadow`
        # is made anew for each checkpoint (no picture of the last tree: git's path).
        other = Path(tmp) / "other" / "files"
        shutil.copytree(store, other)

        def by_git(paths: list[str] | None = None) -> Callable[[], object]:
            return lambda: Shadow(other, ws).capture(paths)

        one = "d01/f1.txt"
        made = [0]

        def change(n: int) -> None:
            (ws / one).write_text(f"changed {n}\n")

        def same(n: int) -> None:
            pass

        def new_file(n: int) -> None:
            made[0] += 1
            (ws / f"d02/new{made[0]}.txt").write_text(f"new {made[0]}\n")

        def after_file_tool(n: int) -> None:  # (each store's own checkpoint of it first)
            change(n)
            shadow.capture([one])
            Shadow(other, ws).capture([one])

        print(f"{'':<42}{'in-process':>12}{'git path':>10}")
        for name, setup in (
            ("file tool, its file changed", change),
            ("file tool, nothing changed", same),
        ):
            fast, slow = paired_ms(runs, setup, lambda: shadow.capture([one]), by_git([one]))
            print(f"{name:<42}{fast:9.1f} ms{slow:7.1f} ms")
        fast, slow = paired_ms(
            runs,
            new_file,
            lambda: shadow.capture([f"d02/new{made[0]}.txt"]),
            lambda: Shadow(other, ws).capture([f"d02/new{made[0]}.txt"]),
        )
        print(f"{'file tool, a new file (check-ignore)':<42}{fast:9.1f} ms{slow:7.1f} ms")
        fast, slow = paired_ms(runs, after_file_tool, shadow.capture, by_git())
        print(f"{'shell after a file tool, nothing else':<42}{fast:9.1f} ms{slow:7.1f} ms")
        rows = [
            ("shell, nothing changed", same, shadow.capture),
            ("shell, one file changed", change, shadow.capture),
            ("the change check's scan (once)", same, lambda: file_states(ws)),
        ]
        for name, setup, timed in rows:
            print(f"{name:<42}{median_ms(runs, setup, timed):8.1f} ms")

        def away(n: int) -> None:
            change(n)
            shadow.capture()

        restore = median_ms(runs, away, lambda: shadow.restore(first.tree))
        print(f"{'restore, one file away':<42}{restore:8.1f} ms")
        print(f"store on disk: {_mb(store)} MB for {_mb(ws)} MB of workspace")


def fork_against_load(records: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sessions"
        root.mkdir()
        directory = trio.run(run_session, root, records // 2, Durability.OFF)
        last = scan_journal(directory / "journal.jsonl").last_seq
        loads = []
        forks = []
        for _ in range(runs):
            start = time.perf_counter()
            load_state(directory, warn=print)
            loads.append(time.perf_counter() - start)
            start = time.perf_counter()
            made = fork(root, directory.name, last, "none")
            forks.append(time.perf_counter() - start)
            shutil.rmtree(made.directory)
        load, forked = statistics.median(loads), statistics.median(forks)
        print(f"session of {last} records ({_mb(directory)} MB)")
        print(f"load_state {load * 1000:8.1f} ms   fork {forked * 1000:8.1f} ms")
        print(f"fork / load {forked / load:.2f}")


def _mb(path: Path) -> str:
    total = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return f"{total / (1024 * 1024):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--records", type=int, default=100_000)
    args = parser.parse_args()
    checkpoints(args.files, args.mb, args.runs)
    fork_against_load(args.records, args.runs)


if __name__ == "__main__":
    main()
