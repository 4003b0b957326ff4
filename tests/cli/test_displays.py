"""Issue 38, item 8: what a person reads was short or untrue. The Ctrl+C summary has the
task tree, the workspace and the spend; the live view names each agent's model from its
start, whole when it fits; a task's time is the time it ran, not the days between a
crash and a resume; `plan` warns of nothing it never does; `chat --last` shows the
conversation so far."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import orjson

from tests.cli.test_headless import NOTICE
from tests.cli.test_headless import orchestrator as headless
from tests.plans.test_handoff import SCRIPT as PLANNED
from tests.scenes import call

DELEGATES_A_SLEEPER = {
    "main": [
        {
            "text": "One task.",
            "tool_calls": [
                call("delegate", description="sleeper", prompt="sleep"),
                call("wait_tasks", timeout=600),
            ],
        },
        {"text": "slept"},
    ],
    "t1": [
        {"tool_calls": [call("shell", command="sleep 60")]},
        {"tool_calls": [call("complete", summary="slept")]},
    ],
}


def test_ctrl_c_is_summed_up_as_the_end_of_a_run_is(tmp_path: Path) -> None:
    """The task tree, where the results are, what the session spent and how to go on."""
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps({"agents": DELEGATES_A_SLEEPER}))
    root, ws = tmp_path / "s", tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "run", "sleep", "-m", f"scripted:{script}",
         "-w", str(ws), "--yes", "--sandbox", "off", "--json", "--sessions-dir", str(root)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        event = orjson.loads(line)
        if event["kind"] == "tool_call_started" and event["agent"] == "t1":
            proc.send_signal(signal.SIGINT)
            break
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    [sid] = [p.name for p in root.iterdir()]
    people = stderr.decode().splitlines()
    tree = people[people.index("tasks:") + 1 :]
    assert tree[0].split() == ["TASK", "STATE", "TOOK", "WHAT"]
    assert tree[1].startswith("  main   interrupted  ")
    assert "the session · " in tree[1]
    assert tree[2].startswith("  └─ t1  running  ")  # as its record stands: revived on resume
    assert tree[3:6] == [
        f"session {sid} interrupted (Ctrl+C)",
        f"  workspace  {ws}",
        f"  session    {root / sid}",
    ]
    assert re.fullmatch(r"  spent      [\d.k]+ tokens, unpriced; this run \d+\.\ds", tree[6])
    assert tree[7:] == [
        f"  next       continue it with: orchestrator resume {sid} --sessions-dir {root}"
    ]


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
