"""Resuming after a compaction (issue 21): `load_state` of a session whose main agent's
context restarted from a checkpoint reads only what follows it.

    .venv/bin/python tests/benchmarks/bench_resume.py [--before 100000] [--after 1000] [--runs 7]

Three sessions, each made by a real run (`create_session` / `open_session` / `drive`) of
the shape in `shape.py` (a tool call and its 200-byte result a round, answered at once by
a scripted model), with the journal's `off` policy as `bench_load.py` makes them:

- **short**: `--after` messages, nothing more: what the resume of (b) should cost;
- **checkpointed**: `--before` messages, then a compaction of the main agent (its
  `context_compacted` record, made by the real compactor: the model claims a tiny window
  for one round, and a fixed summary answers), then `--after` messages;
- **with a finished subagent**: the same, but the main agent first delegates one task
  that completes at once, so a finished subagent's context starts near the journal's
  start.

Each load runs in a fresh process (`load_state`, as a resume does), the three
interleaved, `--runs` times; the figure is the median, and the ratios are each round's
loads over its short one's, then their median, by wall and by CPU time. Each process also
times the journal's scan from where the load starts (`scan_journal` from
`SessionState.context_start()`), the part a checkpoint cannot shorten today. The target
is checkpointed / short <= 1.5.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from orchestrator.loop.compaction import ContextCompacted  # noqa: E402
from orchestrator.models.base import COMPACTOR, ModelRequest  # noqa: E402
from orchestrator.models.scripted import (  # noqa: E402
    ScriptedCall,
    ScriptedModel,
    ScriptedReply,
    ScriptedWindow,
)
from orchestrator.session.live import JOURNAL, open_session  # noqa: E402
from orchestrator.state.events import Event  # noqa: E402
from orchestrator.state.settings import SessionSettings  # noqa: E402
from orchestrator.store import Durability  # noqa: E402
from orchestrator.team.definitions import AgentDefinition, Definitions  # noqa: E402
from orchestrator.team.drive import RunSettings, drive  # noqa: E402
from orchestrator.team.queries import MAIN  # noqa: E402
from orchestrator.tools import PermissionPolicy, ToolRegistry, approve_all  # noqa: E402
from tests.benchmarks.bench_compaction import SUMMARY  # noqa: E402
from tests.benchmarks.shape import Fixed as _Fixed  # noqa: E402
from tests.benchmarks.shape import bench_session  # noqa: E402

MEASURE = """
import sys, time
from pathlib import Path
from orchestrator.session.live import JOURNAL, load_state
from orchestrator.session.replay import read_snapshot
from orchestrator.store.scan import scan_journal
directory = Path(sys.argv[1])
start, cpu = time.perf_counter(), time.process_time()
state = load_state(directory, warn=print)
load, load_cpu = time.perf_counter() - start, time.process_time() - cpu
assert state.status == "completed", state.status
snapshot = read_snapshot(directory, print)
start = time.perf_counter()
first = state.context_start()
scan = scan_journal(directory / JOURNAL, after_seq=first - 1, mark=snapshot.journal)
scanned = time.perf_counter() - start
print(load, load_cpu, scanned, first, scan.last_seq, len(state.agents["main"].messages))
"""


class Round(BaseModel):
    n: int = 0


class Fixed(_Fixed):
    """`shape.Fixed`, called with the round's number (the same call three times in a row
    is a loop, which the assessment stops)."""

    args_model = Round  # type: ignore[assignment]


QUICK = AgentDefinition(
    name="quick",
    description="Completes at once.",
    prompt="Complete your task.",
    tools=("fixed",),
)


class Brain:
    """The main agent calls `fixed` for `before` rounds, then its model claims a tiny
    window for one round (the compactor's trigger: the context is past 80% of it), then
    `after` more rounds, then answers. With `subagent`, its first reply delegates a task
    that completes at once."""

    def __init__(self, before: int, after: int, subagent: bool) -> None:
        self.before, self.after, self.subagent = before, after, subagent
        self.model: ScriptedModel | None = None  # the model whose window it claims

    def __call__(self, request: ModelRequest) -> ScriptedReply:
        if request.role == COMPACTOR:
            return ScriptedReply(text=SUMMARY)
        if request.agent != MAIN:
            return _call("complete", summary="done at once")
        step = request.step
        if self.subagent and step == 0:
            return _call(
                "delegate",
                description="quick",
                prompt="complete",
                agent_type="quick",
                write_scope=[],
            )
        if self.model is not None:
            # Claimed for the round after `before`: compaction comes before its request.
            compact = self.before and step == self.before - 1
            self.model.window = ScriptedWindow(context=1) if compact else None
        if step < self.before + self.after:
            return _call("fixed", n=step)
        return ScriptedReply(text="done")


def _call(name: str, **arguments: Any) -> ScriptedReply:
    return ScriptedReply(tool_calls=(ScriptedCall(name=name, arguments=arguments),))


class _Checkpoints:
    def __init__(self) -> None:
        self.records: list[ContextCompacted] = []

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        if isinstance(event, ContextCompacted):
            self.records.append(event)


def make(root: Path, before: int, after: int, subagent: bool) -> Path:
    """Run one session; its directory."""
    root.mkdir()
    session_id, directory = bench_session(root)
    trio.run(run, root, session_id, before, after, subagent)
    return directory


async def run(root: Path, session_id: str, before: int, after: int, subagent: bool) -> None:
    brain = Brain(before, after, subagent)
    model = brain.model = ScriptedModel(brain, name="scripted:bench")
    checkpoints = _Checkpoints()
    settings = RunSettings(
        model=model,
        tools=ToolRegistry([Fixed()]),
        ui=checkpoints,
        policy=PermissionPolicy(),
        approve=approve_all,
        definitions=Definitions([QUICK]),
        # A short verbatim tail (1,000 tokens), so what follows the checkpoint is mostly
        # the `after` rounds.
        session=SessionSettings(max_rounds=before + after + 5, keep_recent=1_000),
    )
    async with open_session(root, session_id, durability=Durability.OFF, warn=print) as live:
        result = await drive(live, settings)
    assert result.status == "completed", result
    assert len(checkpoints.records) == (1 if before else 0), checkpoints.records


def measure(directory: Path) -> list[float]:
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(directory)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout.split()
    return [float(figure) for figure in out]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=int, default=100_000)
    parser.add_argument("--after", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    try:
        sessions = {
            "short": make(root / "a", 0, args.after // 2, False),
            "checkpointed": make(root / "b", args.before // 2, args.after // 2, False),
            "with a finished subagent": make(root / "c", args.before // 2, args.after // 2, True),
        }
        figures: dict[str, list[list[float]]] = {name: [] for name in sessions}
        for _ in range(args.runs):
            for name, directory in sessions.items():
                figures[name].append(measure(directory))
        short = figures["short"]
        print(
            f"{'session':<26} {'records':>8} {'journal':>9} {'load from':>10} "
            f"{'context':>8} {'load ms':>8} {'CPU ms':>7} {'scan ms':>8} "
            f"{'/ short':>8} {'CPU / short':>12}"
        )
        for name, runs in figures.items():
            load, cpu, scan = (statistics.median(r[i] for r in runs) for i in range(3))
            start, records, messages = (int(v) for v in runs[0][3:6])
            ratio = statistics.median(r[0] / s[0] for r, s in zip(runs, short, strict=True))
            ratio_cpu = statistics.median(r[1] / s[1] for r, s in zip(runs, short, strict=True))
            size = (sessions[name] / JOURNAL).stat().st_size
            print(
                f"{name:<26} {records:>8} {size / 1e6:>7.1f}MB {start:>10} {messages:>8} "
                f"{load * 1000:>8.1f} {cpu * 1000:>7.1f} {scan * 1000:>8.1f} "
                f"{ratio:>8.2f} {ratio_cpu:>12.2f}"
            )
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
