"""bench_engine.py still runs as a script (its figures are in docs/performance.md;
nothing here is timed): its smallest configuration, on SQLite, each kind of figure
printed. In a process of its own, as DBOS is one per process and keeps its logging
bound to the streams of the first launch."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("dbos")

from tests.benchmarks import bench_engine

WORKERS = ["--workers", "1", "--silent", "1"]  # on SQLite, without Postgres
SMALLEST = ["--tasks", "1", "2", "--runs", "1", "--w3", "3", "--w3-runs", "1", "--latency", "0.01"]


def test_the_engine_benchmark_runs() -> None:
    out = subprocess.run(
        [sys.executable, bench_engine.__file__, *SMALLEST, "--no-postgres", *WORKERS],
        capture_output=True,
        text=True,
        check=True,
        timeout=180,
    ).stdout
    assert "postgres: skipped (--no-postgres)" in out
    for shape in bench_engine.SHAPES:
        assert f"{shape:<8} sqlite   overhead" in out
    assert "sqlite (cap 3)" in out
    assert "local (in process)" in out
    assert "on 1 worker(s)" in out
    assert "--silent 1 --beat 0.166667: detected" in out
