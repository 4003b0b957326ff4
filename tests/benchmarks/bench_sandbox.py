"""What the shell's sandbox adds to a call: `true` run by the shell tool at each level.

    .venv/bin/python tests/benchmarks/bench_sandbox.py [--calls 50]

Runs the calls of the levels interleaved (off, workspace, strict, off, ...), so every
level sees the same machine at the same moments, and prints each level's median and
what it adds to `off`'s, in ms, and its ratio to `off`. The target: at most 20 ms added.
Not a test (pytest does not collect `bench_*.py`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import trio

from orchestrator.tools import Shell, ToolContext, Workspace
from orchestrator.tools.sandbox import LEVELS, Sandbox
from orchestrator.tools.shell import ShellArgs


async def measure(calls: int, root: Path) -> dict[str, list[float]]:
    ctx = ToolContext(workspace=Workspace(root))
    shells = {level: Shell(sandbox=Sandbox(level=level)) for level in LEVELS}
    times: dict[str, list[float]] = {level: [] for level in LEVELS}
    for shell in shells.values():  # a first call each: the probe, the imports
        await shell.run(ShellArgs(command="true"), ctx)
    for _ in range(calls):
        for level, shell in shells.items():
            start = time.perf_counter()
            out = await shell.run(ShellArgs(command="true"), ctx)
            times[level].append(time.perf_counter() - start)
            assert out.status == "ok", out.content
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    if not Sandbox().active:
        print(f"no sandbox on this machine: {Sandbox().unavailable()}")
        return
    with tempfile.TemporaryDirectory() as root:
        times = trio.run(measure, args.calls, Path(root))
    base = statistics.median(times["off"])
    print(f"shell `true`, median of {args.calls} calls per level, interleaved")
    for level in LEVELS:
        median = statistics.median(times[level])
        print(
            f"{level:10} {median * 1000:7.1f} ms   added {(median - base) * 1000:6.1f} ms   "
            f"ratio {median / base:5.2f}"
        )


if __name__ == "__main__":
    main()
