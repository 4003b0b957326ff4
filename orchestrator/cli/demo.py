"""`orchestrator demo`: the offline demo, the whole product, with a real crash and a
resume.

A planner writes a plan of four tasks with dependencies, which is approved (`--approve`,
shown); the builder delegates all four at once and the runtime holds two until the first
two complete. The session first runs in a child process, and when a worker starts its
first `shell` call (the other mid-task) the demo kills that process with SIGKILL, as a
power cut would, then resumes the session in this process from its journal: the tasks
are revived, the interrupted call is reported to its worker, and everyone carries on.
One worker asks a decision, one reports blocked and its task is re-planned (plan v2),
one fails its acceptance check once; the builder's context is compacted once; the plan's
checks are the final verification.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import trio

from orchestrator.state.events import EventSink, ToolCallStarted, event_from_json

VERIFY = "python -m doctest README.md"  # the README's example must be right
GOAL = (
    "Write two small Python modules, mathutil (mean, median) and textutil (slugify, "
    "word_count), each with a passing test, a README, and a wordstats command that "
    "uses both."
)


async def run_until_crash(
    root: Path,
    session_id: str,
    ui: EventSink,
    *,
    json_mode: bool,
    say: Callable[[str], None] = print,
) -> bool:
    """Run the session in a child process and SIGKILL it when a worker's first shell call
    starts (said with `say`).
    Returns True if the kill happened (False if the child finished first)."""
    command = [
        sys.executable,
        "-m",
        "orchestrator",
        "resume",
        session_id,
        "--yes",
        "--approve",
        "--json",
        "--sessions-dir",
        str(root),
    ]
    process = await trio.lowlevel.open_process(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
    )
    assert process.stdout is not None
    buffer = b""
    try:
        async for chunk in process.stdout:
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                event = event_from_json(line)
                await ui.emit(event)
                if (
                    isinstance(event, ToolCallStarted)
                    and event.call.name == "shell"
                    and event.agent != "main"
                ):
                    process.send_signal(signal.SIGKILL)
                    await process.wait()
                    if not json_mode:
                        say(
                            f"\n✂ simulated crash: SIGKILL to the agent process (pid "
                            f"{process.pid}) while {event.agent}'s shell call was running "
                            "and the other workers were mid-task\n"
                        )
                    return True
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
    await process.wait()
    return False
