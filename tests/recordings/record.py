"""Re-record the sessions under `sessions/` (run by hand when the format changes:
`.venv/bin/python tests/recordings/record.py`). Each recording is a sessions root holding
one session made by the real CLI with `--session-workspace`, so it is relocatable."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import msgspec
import orjson

from orchestrator.state.manifest import FORMAT_VERSION, read_manifest, write_manifest
from orchestrator.store import session_id_time

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "orchestrator" / "demo" / "script.json"
from orchestrator.cli.demo import GOAL, VERIFY  # noqa: E402


def record(name: str, *, kill_after_events: int | None) -> Path:
    target = ROOT / "sessions" / f"v{FORMAT_VERSION}-{name}"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    command = [
        sys.executable,
        "-m",
        "orchestrator",
        "run",
        GOAL,
        "--model",
        f"scripted:{SCRIPT}",
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
        # Kill just after a shell call became durable and before it finished.
        if (
            kill_after_events is not None
            and seen >= kill_after_events
            and (event["kind"] == "tool_call_started" and event["call"]["name"] == "shell")
        ):
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    proc.stdout.close()
    return target


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
