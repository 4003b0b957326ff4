"""Journal benchmarks: append rates per durability policy, the raw fsync rate, scan times.

    .venv/bin/python tests/benchmarks/bench_journal.py [--dir DIR] [--quick] [--records N]

Prints one line per figure. The files go to a temporary directory under DIR (default: the
system's), which should be on the disk sessions live on: fsync rates depend on it. Not a
test (pytest does not collect `bench_*.py`); docs/performance.md records its figures.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import trio

from orchestrator.store import Durability, open_journal, scan_journal
from orchestrator.store._line import encode

# About 1 KB once framed: an assistant message with one tool call, as the session layer
# would journal it.
BODY = {
    "role": "assistant",
    "content": (
        "The test fails because the fixture closes the file before the reader is done. " * 8
    )[:640],
    "tool_calls": [
        {"id": "call_0001", "name": "edit_file", "arguments": {"path": "src/app/io.py", "line": 42}}
    ],
    "usage": {"input_tokens": 18234, "output_tokens": 211, "cache_read_tokens": 16000},
    "model": "claude-sonnet-4-5",
    "stop_reason": "tool_use",
}
RECORD_BYTES = len(
    encode(100_000, round(time.time() * 1000), "assistant_replied", "main", BODY, end=True)
)


def fsync_rate(directory: Path, seconds: float) -> float:
    """1 KB appends, each followed by fdatasync, for `seconds`: syncs per second."""
    path = directory / "fsync.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    block = b"x" * 1023 + b"\n"
    count = 0
    start = time.perf_counter()
    try:
        while time.perf_counter() - start < seconds:
            os.write(fd, block)
            os.fdatasync(fd)
            count += 1
    finally:
        os.close(fd)
        path.unlink()
    return count / (time.perf_counter() - start)


async def append_rate(
    directory: Path, policy: Durability, *, tasks: int, per_task: int, durable: bool
) -> float:
    """Records per second appended by `tasks` concurrent appenders, flush included."""
    path = directory / f"append-{policy}-{tasks}-{durable}.jsonl"

    async def appender(journal_append: Callable[..., Awaitable[int]]) -> None:
        for _ in range(per_task):
            await journal_append("assistant_replied", "main", BODY, durable=durable)

    start = time.perf_counter()
    async with open_journal(path, durability=policy) as journal:
        async with trio.open_nursery() as nursery:
            for _ in range(tasks):
                nursery.start_soon(appender, journal.append)
        await journal.flush()
    elapsed = time.perf_counter() - start
    assert scan_journal(path).last_seq == tasks * per_task
    path.unlink()
    return tasks * per_task / elapsed


def write_journal(path: Path, records: int) -> None:
    now = round(time.time() * 1000)
    with path.open("wb") as file:
        for seq in range(1, records + 1):
            file.write(
                encode(
                    seq, now, "assistant_replied", "main", BODY, end=seq % 4 == 0 or seq == records
                )
            )


def scan_seconds(path: Path, after_seq: int, repeats: int) -> float:
    """The best of `repeats` scans (page cache warm), freeing each result outside the timing."""
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        scan = scan_journal(path, after_seq=after_seq)
        best = min(best, time.perf_counter() - start)
        del scan
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", type=Path, default=None, help="where to write the test files")
    parser.add_argument("--quick", action="store_true", help="smaller runs, rougher figures")
    parser.add_argument(
        "--records", type=int, default=None, help="appended a run (100,000; --quick 20,000)"
    )
    args = parser.parse_args()
    quick = args.quick
    n = args.records or (20_000 if quick else 100_000)
    directory = Path(tempfile.mkdtemp(prefix="bench-journal-", dir=args.dir))
    try:
        print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}: {platform.platform()}")
        print(f"# {os.cpu_count()} CPUs, Python {platform.python_version()}, files in {directory}")
        print(f"# records of {RECORD_BYTES} bytes framed\n")

        # (The suite's smallest run, a few hundred records, times fsync briefly too.)
        syncs = fsync_rate(directory, min(1.0 if quick else 3.0, n / 5_000))
        print(f"raw fdatasync rate (1 KB append + fdatasync)      {syncs:>10,.0f} /s")

        runs: list[tuple[str, Durability, int, int, bool]] = [
            ("batch, 1 appender, durable=False", Durability.BATCH, 1, n, False),
            ("batch, 100 appenders, durable=False", Durability.BATCH, 100, n // 100, False),
            ("batch, 100 appenders, durable=True", Durability.BATCH, 100, n // 500, True),
            ("batch, 1 appender, durable=True", Durability.BATCH, 1, n // 50, True),
            ("always, 1 appender", Durability.ALWAYS, 1, n // 50, False),
            ("always, 100 appenders", Durability.ALWAYS, 100, n // 500, False),
            ("off, 1 appender, durable=False", Durability.OFF, 1, n, False),
        ]
        for label, policy, tasks, per_task, durable in runs:
            run = functools.partial(append_rate, directory, policy, tasks=tasks, per_task=per_task)
            rate = trio.run(functools.partial(run, durable=durable))
            print(f"append {label:<42} {rate:>10,.0f} records/s")

        print()
        largest = n // 2 if quick else n
        for records in sorted({min(1_000, largest), largest}):
            path = directory / f"scan-{records}.jsonl"
            write_journal(path, records)
            size = path.stat().st_size
            repeats = 3 if records > 10_000 else 10
            full = scan_seconds(path, 0, repeats)
            tail = scan_seconds(path, records - 100, repeats)
            what = f"scan {records:>7,} records ({size / 1e6:6.1f} MB)"
            print(f"{what}, every line checked   {full * 1000:8.1f} ms")
            print(f"{what}, after_seq = last-100 {tail * 1000:8.1f} ms")
            path.unlink()
    finally:
        shutil.rmtree(directory)


if __name__ == "__main__":
    sys.exit(main())
