"""The chaos run, measured (issue 41): what a seeded 30% of failing requests costs a team.

    .venv/bin/python tests/benchmarks/bench_chaos.py [--runs 3] [--share 0.3]

`orchestrator run` (a real process) with a team of eight workers on a fallback chain of an
Anthropic model and an OpenAI-compatible one, each served on loopback by the chaos
servers of tests/providers/chaos.py (the same as tests/providers/test_chaos.py): the main
agent delegates eight file writes, each worker writes its file and completes. Each run is
made twice, once with no failures and once with `--share` of the requests failing (429s
with and without retry-after, 500s, overloads, quota errors, streams cut mid-reply,
replies cut at their output limit), seed by seed. It prints, per run and in sum, the
requests each server got, the failures served, the replies journaled, and the wall time;
then the ratios of the failing runs to the clean ones, measured in this one process.

The waits are real: a 429 with `retry-after: 0.5` waits half a second, one without waits
the backoff (1 s, then 2 s, with jitter), so most of the added time is the providers'
asking to wait, not the orchestrator's own.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import orjson
import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "providers")]

from chaos import Chaos, TeamModel, handler, run_team  # noqa: E402
from provider_server import LoopbackServer  # noqa: E402


@dataclass
class Measured:
    requests: int
    anthropic: int
    openai: int
    faults: int
    replies: int
    switches: int
    seconds: float


async def one_run(share: float, seed: int) -> Measured:
    with tempfile.TemporaryDirectory() as tmp:
        workspace, sessions = Path(tmp) / "ws", Path(tmp) / "sessions"
        workspace.mkdir()
        model = TeamModel(workspace)
        chaos = Chaos(seed=seed, share=share)
        anthropic = LoopbackServer(handler=handler(model, chaos, "anthropic"))
        openai = LoopbackServer(handler=handler(model, chaos, "openai"))
        async with trio.open_nursery() as nursery:
            await nursery.start(anthropic.serve)
            await nursery.start(openai.serve)
            started = time.perf_counter()
            ran = await run_team(workspace, sessions, anthropic, openai)
            seconds = time.perf_counter() - started
            nursery.cancel_scope.cancel()
        if ran.returncode != 0:
            raise SystemExit(f"the run failed (share {share}, seed {seed}):\n{ran.stdout.decode()}")
        for name, content in model.expected().items():
            assert (workspace / name).read_text() == content, name
        (journal,) = sessions.rglob("journal.jsonl")
        kinds = [orjson.loads(line)["k"] for line in journal.read_bytes().splitlines()]
    return Measured(
        requests=len(anthropic.requests) + len(openai.requests),
        anthropic=len(anthropic.requests),
        openai=len(openai.requests),
        faults=sum(chaos.faults.values()),
        replies=kinds.count("assistant_replied"),
        switches=kinds.count("model_switched"),
        seconds=seconds,
    )


def _row(label: str, m: Measured) -> str:
    return (
        f"{label:<16} {m.requests:>8} {m.anthropic:>9} {m.openai:>6} {m.faults:>6} "
        f"{m.replies:>7} {m.switches:>8} {m.seconds:>8.2f}"
    )


def _sum(runs: list[Measured]) -> Measured:
    return Measured(
        *(sum(getattr(m, f) for m in runs) for f in ("requests", "anthropic", "openai")),
        *(sum(getattr(m, f) for m in runs) for f in ("faults", "replies", "switches")),
        sum(m.seconds for m in runs),
    )


async def main(runs: int, share: float) -> None:
    print(f"{'run':<16} {'requests':>8} {'anthropic':>9} {'openai':>6} {'faults':>6} "
          f"{'replies':>7} {'switches':>8} {'wall s':>8}")  # fmt: skip
    clean: list[Measured] = []
    failing: list[Measured] = []
    for seed in range(1, runs + 1):
        clean.append(await one_run(0.0, seed))
        print(_row(f"seed {seed} clean", clean[-1]))
        failing.append(await one_run(share, seed))
        print(_row(f"seed {seed} {share:.0%}", failing[-1]))
    a, b = _sum(clean), _sum(failing)
    print(_row("all clean", a))
    print(_row(f"all {share:.0%}", b))
    print(
        f"failing / clean: requests {b.requests / a.requests:.2f}x, "
        f"wall time {b.seconds / a.seconds:.2f}x; replies {b.replies} vs {a.replies} "
        f"(recovered cut replies are joined into one)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="seeds, each run clean and failing")
    parser.add_argument("--share", type=float, default=0.3, help="the share of requests failing")
    options = parser.parse_args()
    trio.run(main, options.runs, options.share)
