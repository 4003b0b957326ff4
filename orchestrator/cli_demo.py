"""`orchestrator demo`: the offline demo, with a real crash and a resume.

The agent first runs in a child process; when it starts its first `shell` call the demo
kills that process with SIGKILL, as a power cut would, then resumes the session in this
process from its journal. The interrupted call is reported to the model, which carries on.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import trio

from orchestrator.events import EVENT_ADAPTER, EventSink, ToolCallStarted

GOAL = (
    "Write a small Python statistics module with mean() and median(), and a test for it; "
    "make the test pass."
)


async def run_until_crash(root: Path, session_id: str, ui: EventSink, *, json_mode: bool) -> bool:
    """Run the session in a child process and SIGKILL it when its first shell call starts.
    Returns True if the kill happened (False if the child finished first)."""
    command = [
        sys.executable,
        "-m",
        "orchestrator",
        "resume",
        session_id,
        "--yes",
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
                event = EVENT_ADAPTER.validate_json(line)
                await ui.emit(event)
                if isinstance(event, ToolCallStarted) and event.call.name == "shell":
                    process.send_signal(signal.SIGKILL)
                    await process.wait()
                    if not json_mode:
                        print(
                            f"\n✂ simulated crash: SIGKILL to the agent process (pid "
                            f"{process.pid}) while its shell call was running\n",
                            flush=True,
                        )
                    return True
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
    await process.wait()
    return False
