"""Per-round cost as the conversation grows (issue 7: growth and overall ms/round).

    .venv/bin/python tests/benchmarks/bench_rounds.py [--rounds 1000 5000] [--policies ...]

One agent, the shape of `shape.py` (one tool call and its 200-byte result a round), driven
through create_session / open_session / drive. For each run it prints the mean ms/round
of the first and last 10% of rounds and their ratio (target <= 1.2: no growth; also the
same ratio of the process's CPU time, which other work on a shared machine moves less), the
overall ms/round (target <= 0.5 with `batch` on the 2-core machines), the journal records
a round writes, bytes on disk per message, and snapshot bytes written per round.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import trio

from orchestrator.session.live import JOURNAL, SNAPSHOT
from orchestrator.store import Durability, scan_journal
from tests.benchmarks.shape import RoundClock, SnapshotMeter, run_session


def bench(rounds: int, policy: Durability) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-rounds-"))
    try:
        clock = RoundClock()
        with SnapshotMeter() as meter:
            start = time.perf_counter()
            directory = trio.run(run_session, root, rounds, policy, clock)
            total = time.perf_counter() - start
        per_round = clock.round_ms()
        tenth = max(1, len(per_round) // 10)
        first = statistics.fmean(per_round[:tenth])
        last = statistics.fmean(per_round[-tenth:])
        # CPU time too: what other processes on a shared machine do moves it much less.
        cpu = clock.round_ms(cpu=True)
        cpu_ratio = statistics.fmean(cpu[-tenth:]) / statistics.fmean(cpu[:tenth])
        records = scan_journal(directory / JOURNAL).last_seq
        messages = 2 + 2 * rounds + 1  # system, goal, a call and its result a round, answer
        size = (directory / JOURNAL).stat().st_size + (directory / SNAPSHOT).stat().st_size
        print(
            f"{rounds:>6} rounds {policy.value:<6}: first 10% {first:6.3f} ms/round, "
            f"last 10% {last:6.3f} ms/round, ratio {last / first:5.2f} (CPU time "
            f"{cpu_ratio:4.2f}); overall "
            f"{total * 1000 / rounds:6.3f} ms/round; {records / rounds:4.2f} records/round; "
            f"{size / messages:5.0f} B/message on disk; snapshots {meter.writes} writes, "
            f"{meter.bytes / rounds:6.1f} B/round"
        )
    finally:
        shutil.rmtree(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument(
        "--policies",
        nargs="+",
        default=["always", "batch", "off"],
        choices=["always", "batch", "off"],
    )
    args = parser.parse_args()
    for rounds in args.rounds:
        for policy in args.policies:
            bench(rounds, Durability(policy))


if __name__ == "__main__":
    main()
