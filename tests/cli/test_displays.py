"""Issue 38, item 8: what a person reads was short or untrue. The Ctrl+C summary has the
task tree, the workspace and the spend; the live view names each agent's model from its
start, whole when it fits; a task's time is the time it ran, not the days between a
crash and a resume; `plan` warns of nothing it never does; `chat --last` shows the
conversation so far."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.cli.test_headless import NOTICE
from tests.cli.test_headless import orchestrator as headless
from tests.plans.test_handoff import SCRIPT as PLANNED


def test_plan_does_not_warn_of_the_write_tools_its_planner_never_has(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(PLANNED))
    ws = tmp_path / "ws"
    ws.mkdir()
    common = ("-m", f"scripted:{script}", "-w", str(ws), "--sandbox", "off")
    planned = headless("plan", "write two files", *common, sessions=tmp_path / "s")
    assert planned.returncode == 0, planned.stderr
    assert NOTICE not in planned.stderr
    # A run that builds the plan writes: it is told, as before.
    built = headless(
        "run", "write two files", "--plan", "--approve", *common, sessions=tmp_path / "s"
    )
    assert NOTICE in built.stdout
