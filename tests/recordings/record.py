"""Re-record the sessions under `sessions/` (run by hand when the format changes:
`.venv/bin/python tests/recordings/record.py`). Each recording is a sessions root holding
one session made by the real CLI with `--session-workspace`, so it is relocatable.

The script is the demo's (whose text worker runs its test in the background, t6), with
one more call in the background added (format 9): as it
delegates, the builder starts the whole check in the background (`shell`, `background:
true`): it waits for the last file the plan asks for, then runs every test. The builder's
first `wait_tasks` names its four workers (a check that waits for `wordstats.py` would
otherwise hold it until the re-plan it waits to make); its last waits for all its tasks,
the check among them. So the completed recording has the check's end told to the
builder, and the killed one is cut off while the check still waits (a worker's first
test runs long before `wordstats.py` exists): resumed, the check is reported
`interrupted`."""

from __future__ import annotations

import copy
import json
import shutil
import signal
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import msgspec
import orjson

from orchestrator.state.manifest import FORMAT_VERSION, read_manifest, write_manifest
from orchestrator.store import session_id_time
from orchestrator.tools.shell import kill_marked

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "orchestrator" / "demo" / "script.json"
from orchestrator.cli.demo import GOAL, VERIFY  # noqa: E402

CHECK = (
    "echo waiting for wordstats.py; until [ -f wordstats.py ]; do sleep 0.05; done; "
    "python test_mathutil.py && python test_textutil.py && "
    "echo 'a bb ccc dddd' | python wordstats.py && echo all checks passed"
)
"""The builder's call in the background."""


def script_with_background(demo: dict[str, object]) -> dict[str, object]:
    """The demo's script with the builder's check in the background (see the module)."""
    script = copy.deepcopy(demo)
    agents = script["agents"]
    assert isinstance(agents, dict)
    main = agents["main"]
    main[0]["text"] += " Meanwhile the whole check runs in the background."
    main[0]["tool_calls"].append(
        {"name": "shell", "arguments": {"command": CHECK, "background": True}}
    )
    first_wait = main[1]["tool_calls"][0]
    assert first_wait["name"] == "wait_tasks"
    first_wait["arguments"]["tasks"] = ["t1", "t2", "t3", "t4"]
    script["description"] = str(script["description"]) + (
        " The builder runs the whole check in the background meanwhile (a task of kind "
        "tool, t5), and its last wait_tasks waits for it too."
    )
    return script


def record(name: str, *, kill_after_events: int | None) -> Path:
    target = ROOT / "sessions" / f"v{FORMAT_VERSION}-{name}"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    # Named script.json, as the session's copy is: the agents' model is named by it.
    scratch = Path(tempfile.mkdtemp())
    script = scratch / "script.json"
    script.write_text(json.dumps(script_with_background(json.loads(SCRIPT.read_text())), indent=2))
    command = [
        sys.executable,
        "-m",
        "orchestrator",
        "run",
        GOAL,
        "--model",
        f"scripted:{script}",
        "--session-workspace",
        "--verify",
        VERIFY,
        "--plan",
        "--approve",
        "--yes",
        "--json",
        "--sessions-dir",
        str(target),
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    for seen, line in enumerate(proc.stdout, start=1):
        event = orjson.loads(line)
        # Kill just after a worker's shell call became durable and before it finished.
        if (
            kill_after_events is not None
            and seen >= kill_after_events
            and (event["kind"] == "tool_call_started" and event["call"]["name"] == "shell")
            and event["agent"] != "main"
            and printed(target)  # and the check has printed its first line
        ):
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    proc.stdout.close()
    shutil.rmtree(scratch)
    for session in target.iterdir():  # what the killed one left running (its check)
        kill_marked(f"{session.name}/")
    return target


def printed(target: Path) -> bool:
    """Whether the check in the background has written to its output file."""
    return any(path.stat().st_size for path in target.glob("*/tasks/*.output"))


def later_than(target: Path, earlier: Path) -> None:
    """Give the one session under `target` an id after the one under `earlier` (both
    runs may fall in the same second): `sessions list` shows the killed one first."""
    [session] = list(target.iterdir())
    [before] = list(earlier.iterdir())
    if session.name > before.name:
        return
    stamp = session_id_time(before.name) + timedelta(seconds=1)
    new = target / f"{stamp:%Y%m%dT%H%M%S}-{session.name.rsplit('-', 1)[1]}"
    session.rename(new)
    write_manifest(new, msgspec.structs.replace(read_manifest(new), id=new.name))


if __name__ == "__main__":
    completed = record("completed", kill_after_events=None)
    killed = record("killed-mid-turn", kill_after_events=12)
    later_than(killed, completed)
    print(completed, killed, sep="\n")
