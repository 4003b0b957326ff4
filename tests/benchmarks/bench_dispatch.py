"""Dispatch latency (issue 22): how long a task waiting for its dependencies takes to
start once the last of them completes.

    .venv/bin/python tests/benchmarks/bench_dispatch.py [--runs N] [--modes memory off batch]
        [--plan]

A dependency graph of 50 tasks in 10 levels of 5 (depth 10): each task of a level waits
for two tasks of the level before it (`delegate(after=[...])`). The main agent delegates
all 50 in one reply, calls `wait_tasks`, then answers. The model is scripted and answers
at once: every worker's one model call is `complete`, so a level completes as soon as it
runs. What is timed, per task created waiting (`waiting_deps`): from its last
dependency's `task_changed completed` record (the moment the session's sink sees it,
right after the journal took it) to its subagent's first model request. A task whose
dependencies had all completed before the main agent delegated it starts `pending` and is
not counted (the main agent delegates while the first level already runs).

`--plan`: the same graph as an approved plan (tasks `p1`..`p50`, each with its own
write scope), delegated by `plan_ref` alone: the plan gives each task its dependencies
and scope, and each is a serialised plan task (its scope checked at every look).

Modes: `memory` (a `MemorySession`: no journal), `off` and `batch` (a real session on
disk driven by `drive`, with that journal policy). Each mode: a warm-up run, then
`--runs` runs (10); p50, p99 and max over every counted task of every run, in ms. It
prints, and asserts nothing but that the run completed (pytest does not collect
`bench_*.py`).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from orchestrator.loop.plan import Plan, PlanTask  # noqa: E402
from orchestrator.messages import SystemMessage, UserMessage  # noqa: E402
from orchestrator.models.base import ModelRequest  # noqa: E402
from orchestrator.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply  # noqa: E402
from orchestrator.session.live import MemorySession, open_session  # noqa: E402
from orchestrator.state.events import AgentStarted, Event, FanOut  # noqa: E402
from orchestrator.state.plans import PlanDecided, PlanSubmitted, PlanVersion  # noqa: E402
from orchestrator.state.settings import SessionSettings  # noqa: E402
from orchestrator.state.tasks import TaskChanged, TaskCreated  # noqa: E402
from orchestrator.store import Durability  # noqa: E402
from orchestrator.team.definitions import WORKER, Definitions  # noqa: E402
from orchestrator.team.drive import RunSettings, drive  # noqa: E402
from orchestrator.team.main_agent import open_team, run_main  # noqa: E402
from orchestrator.team.plan_host import PlanVerdict  # noqa: E402
from orchestrator.team.queries import MAIN  # noqa: E402
from orchestrator.team.settings import Seat  # noqa: E402
from orchestrator.tools import ToolRegistry, Workspace, approve_all  # noqa: E402
from tests.benchmarks.shape import bench_session, bench_settings  # noqa: E402

LEVELS, WIDTH = 10, 5
MODES = ("memory", "off", "batch")


def graph() -> dict[str, list[str]]:
    """Task id -> the task ids it waits for: level 0 waits for nothing; task i of level
    L > 0 waits for tasks i and i+1 (mod 5) of level L-1."""
    deps: dict[str, list[str]] = {}
    for level in range(LEVELS):
        for i in range(WIDTH):
            task = f"t{level * WIDTH + i + 1}"
            if level == 0:
                deps[task] = []
            else:
                above = (level - 1) * WIDTH
                deps[task] = [f"t{above + i + 1}", f"t{above + (i + 1) % WIDTH + 1}"]
    return deps


GRAPH = graph()


def plan_ref(task: str) -> str:
    return "p" + task.removeprefix("t")


PLAN = Plan(
    goal="bench",
    tasks=tuple(
        PlanTask(
            id=plan_ref(task),
            title=f"job {task}",
            depends_on=tuple(plan_ref(d) for d in deps),
            write_scope=(f"{task}/",),
            no_acceptance_reason="a benchmark",
        )
        for task, deps in GRAPH.items()
    ),
)


class Clock:
    """The sink beside the session: when each task completed and how each was created;
    and the responder: when each subagent first asked its model."""

    def __init__(self, plan: bool = False) -> None:
        self.plan = plan
        self.completed: dict[str, float] = {}
        self.waited: set[str] = set()
        self.first_call: dict[str, float] = {}

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        if isinstance(event, TaskChanged) and event.state == "completed":
            self.completed.setdefault(event.task, time.perf_counter())
        elif isinstance(event, TaskCreated) and event.state == "waiting_deps":
            self.waited.add(event.task)

    def __call__(self, request: ModelRequest) -> ScriptedReply:
        if request.agent != MAIN:
            self.first_call.setdefault(request.agent, time.perf_counter())
            return _call("complete", summary=f"{request.agent} done")
        if request.step == 0:
            delegates = [
                ScriptedCall(
                    name="delegate",
                    arguments={"description": f"job {task}", "prompt": "complete"}
                    | (
                        {"plan_ref": plan_ref(task)}
                        if self.plan
                        else {"write_scope": [], "after": deps}
                    ),
                )
                for task, deps in GRAPH.items()
            ]
            return ScriptedReply(tool_calls=tuple(delegates))
        if request.step == 1:
            return _call("wait_tasks", timeout=600)
        return ScriptedReply(text="all done")

    def latencies(self) -> list[float]:
        """Per task created waiting: ms from its last dependency's completion to its
        first model request."""
        found = []
        for task in self.waited:
            last = max(self.completed[dep] for dep in GRAPH[task])
            found.append((self.first_call[task] - last) * 1000)
        return found


def _call(name: str, **arguments: Any) -> ScriptedReply:
    return ScriptedReply(tool_calls=(ScriptedCall(name=name, arguments=arguments),))


SESSION = SessionSettings(max_live=64, max_model_calls=64)  # the limits are not measured
# The built-in worker with no tools of its own, as the session has none: the built-in one,
# whose workspace tools it lacks, is no type of a session driven with these tools.
DEFINITIONS = Definitions([WORKER.model_copy(update={"tools": ()})])


async def run_on_disk(root: Path, clock: Clock, durability: Durability) -> None:
    session_id, _ = bench_session(root)
    settings = bench_settings(
        clock,
        tools=ToolRegistry([]),
        definitions=DEFINITIONS,
        ui=clock,
        session=SESSION,
        seed_plan=PLAN if clock.plan else None,
        approve_plan=_approve,
    )
    async with open_session(root, session_id, durability=durability, warn=print) as live:
        result = await drive(live, settings)
        _check(live.state, result.status)


async def run_in_memory(root: Path, clock: Clock) -> None:
    session = MemorySession()
    model = ScriptedModel(clock, name="scripted:bench")
    run = RunSettings(
        model=model,
        tools=ToolRegistry([]),
        definitions=DEFINITIONS,
        approve_for=lambda agent, who: approve_all,
    )
    seat = Seat(workspace=Workspace(root), settings=SESSION)
    sink = FanOut([session, clock])
    messages = (SystemMessage(content="main"), UserMessage(content="bench"))
    await sink.emit(AgentStarted(agent=MAIN, role="main", messages=messages))
    if clock.plan:
        await sink.emit(PlanSubmitted(agent=MAIN, version=1, plan=PLAN, source="library"))
        await sink.emit(PlanDecided(agent=MAIN, version=1, decision="approved", by="library"))
    async with open_team(session, sink, run, seat) as team:
        outcome = await run_main(team)
    _check(session.state, outcome.reason)


async def _approve(version: PlanVersion) -> PlanVerdict:
    return PlanVerdict("approved", by="library")


def _check(state: Any, status: str) -> None:
    assert status == "completed", status
    states = {t.task_id: t.state for t in state.tasks.tasks.values()}
    assert states == dict.fromkeys(GRAPH, "completed"), states


def run_once(mode: str, plan: bool = False) -> Clock:
    clock = Clock(plan)
    root = Path(tempfile.mkdtemp(prefix="bench-dispatch-"))
    try:
        if mode == "memory":
            trio.run(run_in_memory, root, clock)
        else:
            trio.run(run_on_disk, root, clock, Durability(mode))
    finally:
        shutil.rmtree(root)
    return clock


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))
    return ordered[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--plan", action="store_true", help="the graph as an approved plan")
    args = parser.parse_args()
    print(
        f"dispatch: {len(GRAPH)} {'plan ' if args.plan else ''}tasks, depth {LEVELS}, "
        f"{WIDTH} per level, 2 dependencies each; {args.runs} runs per mode after a warm-up"
    )
    for mode in args.modes:
        run_once(mode, args.plan)  # warm-up: imports, schemas, caches
        values: list[float] = []
        counted = []
        for _ in range(args.runs):
            clock = run_once(mode, args.plan)
            values += clock.latencies()
            counted.append(len(clock.waited))
        print(
            f"{mode:<6} p50 {percentile(values, 50):.3f} ms, p99 {percentile(values, 99):.3f} "
            f"ms, max {max(values):.3f} ms, mean {statistics.mean(values):.3f} ms over "
            f"{len(values)} dispatches ({min(counted)}-{max(counted)} tasks created waiting "
            "per run)"
        )


if __name__ == "__main__":
    main()
