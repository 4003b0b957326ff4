"""Re-record the sessions under `sessions/` (run by hand when the format changes:
`.venv/bin/python tests/recordings/record.py`). Each recording is a sessions root holding
one session made by the real CLI with `--session-workspace`, so it is relocatable."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

from orchestrator.state.manifest import FORMAT_VERSION

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


if __name__ == "__main__":
    print(record("completed", kill_after_events=None))
    time.sleep(1)  # a later session id: `sessions list` shows the killed one first
    print(record("killed-mid-turn", kill_after_events=12))
