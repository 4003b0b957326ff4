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
checks are the final verification. `--latency` slows every reply (the script's
`latency`), so the run can be watched, or killed by hand and resumed.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import orjson
import trio

from orchestrator.cli.env import effective_config, sessions_root
from orchestrator.cli.out import People, session_line
from orchestrator.cli.run import run_kept
from orchestrator.cli.screen import Screen, screen_for
from orchestrator.cli.setup import session_settings
from orchestrator.session.creation import create_session
from orchestrator.state.events import Event, EventSink, ToolCallStarted, event_from_json
from orchestrator.store import Durability

VERIFY = "python -m doctest README.md"  # the README's example must be right
GOAL = (
    "Write two small Python modules, mathutil (mean, median) and textutil (slugify, "
    "word_count), each with a passing test, a README, and a wordstats command that "
    "uses both."
)


def demo(args: argparse.Namespace) -> int:
    """`orchestrator demo`: the session made, its first part run in a child process
    until the kill (unless `--no-crash`), then resumed here, to its summary."""
    from orchestrator.demo import script_path

    workspace = args.workspace or Path(tempfile.mkdtemp(prefix="orchestrator-demo-"))
    workspace.mkdir(parents=True, exist_ok=True)
    root = sessions_root(args)
    run_args = argparse.Namespace(
        yes=True,
        plan=True,  # a planner first; its plan is approved (--approve), then built
        approve=True,
        verify=[VERIFY],
        allow=[],
        json=args.json,
        plain=args.plain,
        fps=args.fps,
        max_rounds=20,
        model=None,
        durability=Durability.BATCH.value,
        config=getattr(args, "config", None),
        sessions_dir=getattr(args, "sessions_dir", None),
    )
    config, _ = effective_config(run_args, os.environ, workspace)
    # Journaled with the session: the child process that is killed, and this one that
    # resumes it, run with the same settings (the verification included).
    with tempfile.TemporaryDirectory(prefix="orchestrator-demo-script-") as scratch:
        # The session keeps a copy of its script: a slowed one need not outlive this.
        script = _slowed(script_path(), args.latency, Path(scratch))
        session_id, _ = create_session(
            root,
            goal=GOAL,
            model=f"scripted:{script}",
            workspace=workspace,
            settings=session_settings(config, run_args),
            source="demo",
        )
    people = People.of(run_args)
    people.say(session_line(session_id, root, run_args, resuming=False))
    people.say(f"demo workspace: {workspace}")
    if not args.no_crash:
        screen = screen_for(run_args, None, config, people=people)
        trio.run(_until_crash, screen, root, session_id, args.json)
        people.say(f"resuming session {session_id} from its journal")
    # The summary names the workspace again, at the end.
    return run_kept(root, session_id, run_args, config, hint=args, people=people)


def _slowed(script: Path, latency: float, scratch: Path) -> Path:
    """The demo's script, or (`--latency`) a copy in `scratch` whose every reply waits
    `latency` seconds; named as the script is, so the view shows the same model."""
    if not latency:
        return script
    raw = orjson.loads(script.read_bytes())
    slowed = scratch / script.name
    slowed.write_bytes(orjson.dumps({**raw, "latency": latency}, option=orjson.OPT_INDENT_2))
    return slowed


async def _until_crash(screen: Screen, root: Path, session_id: str, json_mode: bool) -> None:
    """The demo's first part, its child's events shown on `screen` until the kill."""
    async with screen.shown():
        await run_until_crash(root, session_id, screen.sink, json_mode=json_mode, say=screen.say)


async def run_until_crash(
    root: Path,
    session_id: str,
    ui: EventSink,
    *,
    json_mode: bool,
    say: Callable[[str], None] = print,
) -> bool:
    """Run the session in a child process and SIGKILL it when a worker's first shell call
    in the foreground starts (said with `say`).
    Returns True if the kill happened (False if the child finished first)."""
    command = [
        sys.executable,
        "-m",
        "orchestrator",
        "resume",
        session_id,
        "--yes",  # (not --approve: the session's settings hold it, as they hold --verify)
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
                if _foreground_shell(event) and event.agent != "main":
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


def _foreground_shell(event: Event) -> bool:
    """A shell call that holds its agent's turn (one in the background returns at once)."""
    if not isinstance(event, ToolCallStarted) or event.call.name != "shell":
        return False
    try:
        arguments = orjson.loads(event.call.arguments or "{}")
    except orjson.JSONDecodeError:
        return True
    return not (isinstance(arguments, dict) and arguments.get("background") is True)
