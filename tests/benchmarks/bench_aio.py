"""What awaiting `orc.run` from asyncio costs (issue 23): the same run under trio and
under asyncio, alternately in one process (A B A B ...), with an `on_event` handler.

    .venv/bin/python tests/benchmarks/bench_aio.py [--runs N] [--rounds R]

The run: a main agent whose scripted model calls `read_file` R times (one call per
round, a file each), then answers; a real session on disk (the default journal policy).
Under asyncio the drive runs in a thread of its own and every event crosses to the
caller's loop and back (host/aio.py), so the cost grows with the number of events.
Printed: the median wall time of each, their ratio (asyncio over trio), and the events a
run emits. Asserts only that every run completed (pytest does not collect `bench_*.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import tempfile
import time
from pathlib import Path

import trio

import orchestrator as orc


def model(rounds: int) -> orc.ScriptedModel:
    def respond(request: orc.ModelRequest) -> orc.ScriptedReply:
        if request.step < rounds:
            # (a new file each round: the same call three times in a row is a stall)
            arguments = {"path": f"{request.step}.txt"}
            call = orc.ScriptedCall(name="read_file", arguments=arguments)
            return orc.ScriptedReply(tool_calls=(call,))
        return orc.ScriptedReply(text="done")

    return orc.ScriptedModel(respond)


def one_run(rounds: int, under: str, counted: list[int]) -> float:
    workspace = Path(tempfile.mkdtemp())
    for n in range(rounds):
        (workspace / f"{n}.txt").write_text("hello\n")
    events = 0

    def seen(event: orc.Event) -> None:
        nonlocal events
        events += 1

    go = functools.partial(
        orc.run,
        "read",
        model=model(rounds),
        workspace=workspace,
        sessions_dir=tempfile.mkdtemp(),
        on_event=seen,
        tools=orc.workspace_tools(),
        settings=orc.SessionSettings(max_rounds=rounds + 10),
    )
    started = time.perf_counter()
    result = trio.run(go) if under == "trio" else asyncio.run(go())
    took = time.perf_counter() - started
    assert result.status == "completed", result
    counted.append(events)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"trio": [], "asyncio": []}
    counted: list[int] = []
    one_run(args.rounds, "trio", counted)  # warm-up
    one_run(args.rounds, "asyncio", counted)
    for _ in range(args.runs):
        for under in ("trio", "asyncio"):
            times[under].append(one_run(args.rounds, under, counted))
    trio_s, aio_s = (statistics.median(times[u]) for u in ("trio", "asyncio"))
    print(f"{args.rounds} rounds, {counted[-1]} events a run, {args.runs} runs each, A B A B")
    print(f"  trio     median {trio_s * 1000:8.1f} ms")
    print(f"  asyncio  median {aio_s * 1000:8.1f} ms")
    per_event = (aio_s - trio_s) / counted[-1] * 1e6
    print(f"  asyncio / trio {aio_s / trio_s:.2f}  ({per_event:.0f} µs more per event)")


if __name__ == "__main__":
    main()
