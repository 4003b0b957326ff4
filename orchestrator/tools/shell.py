"""The `shell` tool: a command run by /bin/sh in the workspace, with a timeout and an
output cap. The interpreter running orchestrator comes first on PATH, so `python` in a
command means the same Python everywhere.

Each command runs in a process group of its own, which is killed whole however the call
ends (done, timed out, cancelled): a `sleep 30 &` left behind by the command dies with
it. Each command's environment carries `ORCHESTRATOR_CALL=<marker>` (the session and the
call's ref), so that after a crash of orchestrator itself, `kill_marked` finds the
processes of an interrupted call and kills them before the session resumes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import trio
from pydantic import BaseModel, Field

from orchestrator.tools.base import Tool, ToolContext, ToolOutput
from orchestrator.tools.environment import EnvPolicy

OUTPUT_CAP_BYTES = 64 * 1024
DEFAULT_TIMEOUT = 120.0


class ShellArgs(BaseModel):
    command: str = Field(description="Shell command, run with /bin/sh in the workspace root.")
    timeout: float = Field(
        DEFAULT_TIMEOUT, gt=0, le=3600, description="Seconds before the command is killed."
    )


class Shell(Tool[ShellArgs]):
    name = "shell"
    description = (
        "Run a shell command in the workspace root. Returns the exit code and the combined "
        f"stdout/stderr (capped at {OUTPUT_CAP_BYTES // 1024} KiB)."
    )
    args_model = ShellArgs

    def __init__(
        self, output_cap: int = OUTPUT_CAP_BYTES, env_policy: EnvPolicy | None = None
    ) -> None:
        self.output_cap = output_cap
        self.env_policy = env_policy or EnvPolicy()

    async def run(self, args: ShellArgs, ctx: ToolContext) -> ToolOutput:
        env = self.env_policy.apply(os.environ)
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        if ctx.call_marker:
            env[MARKER] = ctx.call_marker
        kept = bytearray()
        total = 0
        timed_out = False
        process = await trio.lowlevel.open_process(
            ["/bin/sh", "-c", args.command],
            cwd=ctx.workspace.root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            assert process.stdout is not None
            with trio.move_on_after(args.timeout) as scope:
                async for chunk in process.stdout:
                    total += len(chunk)
                    if len(kept) < self.output_cap:
                        kept += chunk[: self.output_cap - len(kept)]
                await process.wait()
            timed_out = scope.cancelled_caught
        finally:
            # Always the whole group: the shell may be gone while what it started is not.
            _kill_group(process.pid)
            if process.returncode is None:
                with trio.CancelScope(shield=True):
                    await process.wait()
        output = kept.decode("utf-8", errors="replace")
        if total > len(kept):
            output += f"\n[output truncated: {total} bytes, showing the first {len(kept)}]"
        if timed_out:
            return ToolOutput.error(f"timed out after {args.timeout:g}s; killed\n{output}")
        code = process.returncode
        text = f"exit code {code}\n{output}"
        return ToolOutput(text) if code == 0 else ToolOutput.error(text)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


MARKER = "ORCHESTRATOR_CALL"


def kill_marked(marker: str, proc: Path = Path("/proc")) -> int:
    """Kill the process groups of every process whose environment carries `marker` (the
    leftovers of a call whose orchestrator died); the number of processes found. Reads
    /proc, so it finds nothing where there is none (not Linux)."""
    needle = f"{MARKER}={marker}".encode() + b"\0"
    found = 0
    for entry in proc.glob("[0-9]*"):
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue  # gone, or not ours to read
        if (b"\0" + environ).find(b"\0" + needle) >= 0:
            found += 1
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(os.getpgid(int(entry.name)), signal.SIGKILL)
    return found
