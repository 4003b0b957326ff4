"""The `shell` tool: a command run by /bin/sh in the workspace, with a timeout and an
output cap. The interpreter running orchestrator comes first on PATH, so `python` in a
command means the same Python everywhere."""

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

    def __init__(self, output_cap: int = OUTPUT_CAP_BYTES) -> None:
        self.output_cap = output_cap

    async def run(self, args: ShellArgs, ctx: ToolContext) -> ToolOutput:
        env = dict(os.environ)
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
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
            if process.returncode is None:
                _kill_group(process.pid)
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
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
