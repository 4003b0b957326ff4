"""A big plan's cost (issue 37, item 6): the journal and the memory of a session given a
plan of `--tasks` tasks that all share one write scope, built by a builder that ends at
once. Before, each pair of its tasks made an overlap warning (400 tasks: 79,800).

    .venv/bin/python tests/benchmarks/bench_plan_size.py [--tasks 400]
    PYTHONPATH=/path/to/other/checkout python tests/benchmarks/bench_plan_size.py

Prints the warnings, the journal's bytes and the process's peak memory (max RSS). The
plan limits are raised to fit the plan, where the checkout has them.
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import tempfile
from pathlib import Path

import orjson
import trio

import orchestrator as orc
from orchestrator.models.scripted import parse_script
from orchestrator.team.settings import RunSettings


def the_plan(tasks: int) -> orc.Plan:
    return orc.Plan(
        goal="g",
        tasks=tuple(
            orc.PlanTask(id=f"t{i}", title=f"task {i}", write_scope=("src/",), acceptance="true")
            for i in range(tasks)
        ),
    )


async def main(tasks: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        script = root / "script.json"
        script.write_bytes(orjson.dumps({"agents": {"main": [{"text": "stop"}]}}))
        session_id, directory = orc.create_session(
            root / "sessions", goal="g", model=f"scripted:{script}", workspace=None
        )
        settings = RunSettings(
            model=orc.ScriptedModel(parse_script(orjson.loads(script.read_bytes())))
        )
        if hasattr(settings, "plan_limits"):  # this checkout caps plans
            from orchestrator.loop.plan import PlanLimits

            limits = PlanLimits(max_tasks=tasks, max_bytes=64 << 20)
            settings = dataclasses.replace(settings, plan_limits=limits)
        settings = dataclasses.replace(settings, session=orc.SessionSettings(max_auto_continues=0))
        async with orc.open_session(root / "sessions", session_id, warn=lambda _: None) as live:
            await orc.execute(live, settings, the_plan(tasks), approve=True)
            warnings = len(live.state.plans.versions[0].warnings)
        journal = (directory / "journal.jsonl").stat().st_size
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"tasks {tasks}  warnings {warnings}  journal {journal / 1e6:.2f} MB  max RSS {peak:.0f} MB"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=400)
    trio.run(main, parser.parse_args().tasks)
