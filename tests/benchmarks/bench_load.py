"""Loading a session into a resumable state (issue 7: load over the floor).

    .venv/bin/python tests/benchmarks/bench_load.py [--messages 10000 100000] [--runs 5]

Each session is made by a real run of the shape in `shape.py` (a goal, then a tool call and
its 200-byte result a round). Each load runs in a fresh process, `--runs` times; the
figure is the median. In the same process, after the load, the floor is timed: plain
`orjson.loads` of every line of the same journal, which is the least any load of it can
do. The ratio is each run's load over its own floor, then the median of those; it is
printed by wall time and by CPU time (which other processes on a shared machine move
less). The target is load / floor <= 2.5 at 100k messages. Also printed: bytes on disk per
message, the snapshot's size, and snapshot bytes written per round while the session ran.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
import trio

from orchestrator.session.live import JOURNAL, SNAPSHOT
from orchestrator.store import Durability
from tests.benchmarks.shape import SnapshotMeter, run_session

MEASURE = """
import gc, sys, time
from pathlib import Path
import orjson
from orchestrator.session.live import JOURNAL, load_state
directory = Path(sys.argv[1])
start, cpu = time.perf_counter(), time.process_time()
state = load_state(directory, warn=print)
load, load_cpu = time.perf_counter() - start, time.process_time() - cpu
assert state.status == "completed"
lines = (directory / JOURNAL).read_bytes().splitlines()
gc.disable()
start, cpu = time.perf_counter(), time.process_time()
for line in lines:
    orjson.loads(line)
floor, floor_cpu = time.perf_counter() - start, time.process_time() - cpu
print(load, floor, load_cpu, floor_cpu)
"""


def bench(messages: int, runs: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-load-"))
    try:
        rounds = (messages - 3) // 2
        with SnapshotMeter() as meter:
            directory = trio.run(run_session, root, rounds, Durability.OFF)
        figures = []
        for _ in range(runs):
            out = subprocess.run(
                [sys.executable, "-c", MEASURE, str(directory)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            figures.append([float(figure) for figure in out])
        load, floor, load_cpu, floor_cpu = (
            statistics.median(f) for f in zip(*figures, strict=True)
        )
        # The ratio of each run (load and floor timed in the same process), then their median.
        ratio = statistics.median(f[0] / f[1] for f in figures)
        ratio_cpu = statistics.median(f[2] / f[3] for f in figures)
        journal = (directory / JOURNAL).stat().st_size
        snapshot = (directory / SNAPSHOT).stat().st_size
        count = 2 * rounds + 3
        payload = len(orjson.dumps("x" * 200))
        print(
            f"{count:>7} messages: load {load * 1000:7.1f} ms, floor {floor * 1000:6.1f} ms, "
            f"ratio {ratio:4.2f} (CPU: {load_cpu * 1000:6.1f} / {floor_cpu * 1000:6.1f} ms, "
            f"ratio {ratio_cpu:4.2f}); journal {journal / 1e6:5.1f} MB + snapshot "
            f"{snapshot} B = {(journal + snapshot) / count:5.0f} B/message "
            f"(payload {payload} B); snapshots written {meter.bytes / rounds:5.2f} B/round"
        )
    finally:
        shutil.rmtree(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for messages in args.messages:
        bench(messages, args.runs)


if __name__ == "__main__":
    main()
