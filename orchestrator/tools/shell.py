"""The `shell` tool: a command run by /bin/sh in the workspace, with a timeout and an
output cap. The interpreter running orchestrator comes first on PATH, so `python` in a
command means the same Python everywhere.

Each command runs in a process group of its own, which is killed whole however the call
ends (done, timed out, cancelled): a `sleep 30 &` left behind by the command dies with
it. The call ends when the shell itself exits, after a short grace for the output still
on its way (`GRACE_SECONDS`), even if a process it left in the background holds the
output pipe open; the result says when processes were left to stop.

Each command's environment carries `ORCHESTRATOR_CALL=<marker>` (the session and the
call's ref), so that after a crash of orchestrator itself, `kill_marked` finds the
processes of an interrupted call and kills them before the session resumes (the tool's
`recover`, which the turn loop asks of every call a crash cut off)."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import signal
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import trio
from pydantic import BaseModel, Field

from orchestrator.errors import ToolFailed
from orchestrator.tools.base import Tool, ToolContext, ToolOutput
from orchestrator.tools.environment import EnvPolicy
from orchestrator.tools.sandbox import Place, Sandbox, scope_places, scratch_directory
from orchestrator.tools.spawn import Started, spawn, tied
from orchestrator.tools.workspace import Workspace

OUTPUT_CAP_BYTES = 64 * 1024
DEFAULT_TIMEOUT = 120.0
# Once the shell has exited, how long (trio's clock) the output pipe may stay open: a
# background process it started may hold it, and the command is done all the same.
GRACE_SECONDS = 0.3
LEFTOVERS = "[processes the command left running were stopped when it exited]"
GROUP_POLL_SECONDS = 0.25  # how often a background call looks whether its group is gone


class ShellArgs(BaseModel):
    command: str = Field(description="Shell command, run with /bin/sh in the workspace root.")
    timeout: float = Field(
        DEFAULT_TIMEOUT, gt=0, le=3600, description="Seconds before the command is killed."
    )
    network: bool = Field(
        False,
        description="Whether the command needs the network (closed by the sandbox "
        "otherwise); the user is asked each time.",
    )
    background: bool = Field(
        False,
        description="Run it in the background (a build, a test suite, a server): you get "
        "a task id at once and go on working; its end (exit code, the last lines of its "
        "output) comes to you as a message. wait_tasks, cancel_task and read_task_output "
        "work on it. Its limit is the session's deadline for background calls, not "
        "`timeout`; processes it starts run until it ends.",
    )


class Shell(Tool[ShellArgs]):
    name = "shell"
    description = (
        "Run a shell command in the workspace root. Returns the exit code and the combined "
        f"stdout/stderr (capped at {OUTPUT_CAP_BYTES // 1024} KiB)."
    )
    args_model = ShellArgs
    background = True

    def __init__(
        self,
        output_cap: int = OUTPUT_CAP_BYTES,
        env_policy: EnvPolicy | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.output_cap = output_cap
        self.env_policy = env_policy or EnvPolicy()
        self.sandbox = sandbox or Sandbox()

    async def recover(self, args: ShellArgs, ctx: ToolContext) -> ToolOutput | None:
        """A call cut off by a crash. What its command started may still be running
        (orchestrator was killed, the command was not): its processes, found by the
        call's marker, are killed before anything else happens in the workspace. Then a
        call in the background: its handle, when its task was made (the task itself is
        reported interrupted on its own); it is started now when it was not (its task is
        made before anything runs). A foreground call: None (interrupted)."""
        if ctx.call_marker:
            await trio.to_thread.run_sync(kill_marked, ctx.call_marker)
        if not args.background or ctx.background is None:
            return None
        return await ctx.background.start(self, args, ctx)

    def asks_anyway(self, args: ShellArgs) -> str | None:
        if args.network and self.sandbox.active and not self.sandbox.network:
            return "it asks for the network, which the sandbox closes"
        return None

    def _argv(
        self,
        command: str,
        ctx: ToolContext,
        env: dict[str, str],
        report: int,
        network: bool,
        held: list[int],
    ) -> list[str]:
        """How `command` is run: by /bin/sh, tied to orchestrator's life (`tied`), or
        inside the sandbox when there is one (writes beneath the workspace, or what the
        task's write scope names, directories made if missing, opened without following a
        link, their descriptors added to `held`; and a scratch TMPDIR; `report` hears of
        processes it stopped)."""
        argv = ["/bin/sh", "-c", command]
        if not self.sandbox.active:
            return tied(argv)
        writable = [
            pin(ctx.workspace, parts, is_file, held)
            for parts, is_file in scope_places(ctx.workspace.root, ctx.write_scope)
        ]
        scratch = str(scratch_directory())
        env.update(TMPDIR=scratch, TMP=scratch, TEMP=scratch)
        # A call that asked for the network was asked about (`asks_anyway`): approved.
        sandbox = dataclasses.replace(self.sandbox, network=True) if network else self.sandbox
        return sandbox.command(
            argv,
            writable,
            report,
            workspace=ctx.workspace.root,
            scoped=ctx.write_scope is not None,
            session=ctx.session_directory,
            environ=os.environ,
        )

    async def run(self, args: ShellArgs, ctx: ToolContext) -> ToolOutput:
        process, heard = await self._spawn(args, ctx)
        assert process.stdout is not None
        output = _Output(self.output_cap, copy=ctx.output)
        if ctx.output is not None:  # in the background: until its group is gone
            await _in_background(process, output, heard)
            return _result(process, output.text())
        # Past `after` seconds (the session's `background_after`, when it is shorter than
        # the call's own timeout), a command still running moves to the background.
        after = ctx.background.after if ctx.background is not None else None
        moves = after is not None and after < args.timeout
        leftovers = moved = False
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(output.read, process.stdout)
                with trio.move_on_after(args.timeout) as scope:
                    with trio.move_on_after(after if moves and after else math.inf) as early:
                        await process.wait()
                    if early.cancelled_caught:
                        moved = True  # its reader stops here; the task's goes on
                        nursery.cancel_scope.cancel()
                    else:
                        # The shell is done; what it started may still hold the pipe open.
                        with trio.move_on_after(GRACE_SECONDS):
                            await output.closed.wait()
                if not moved:
                    # Whatever is left in the group is stopped; its output, already in
                    # the pipe, is still read (bounded: a process outside the group may
                    # hold it).
                    leftovers = _kill_group(process.pid)
                    with trio.move_on_after(GRACE_SECONDS):
                        await output.closed.wait()
                    nursery.cancel_scope.cancel()
        finally:
            if not moved:
                # Always the whole group: the shell may be gone while what it started
                # is not.
                _kill_group(process.pid)
                with trio.CancelScope(shield=True):
                    if process.returncode is None:
                        await process.wait()
                    await process.stdout.aclose()  # a process outside the group may hold it
                leftovers = _heard(heard) or leftovers
        if moved:
            assert ctx.background is not None
            assert after is not None

            async def go_on(task_ctx: ToolContext) -> ToolOutput:
                assert task_ctx.output is not None
                output.redirect(task_ctx.output)
                await _in_background(process, output, heard)
                return _result(process, output.text())

            return await ctx.background.adopt(self, args, ctx, go_on, after=after)
        text = output.text()
        if scope.cancelled_caught:
            return ToolOutput.error(f"timed out after {args.timeout:g}s; killed\n{text}")
        return _result(process, text + (f"\n{LEFTOVERS}" if leftovers else ""))

    async def _spawn(self, args: ShellArgs, ctx: ToolContext) -> tuple[Started, int]:
        """The command's process, in a group of its own, and the pipe on which the
        sandbox says it stopped what the command left running."""
        env = self.env_policy.apply(os.environ)
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        if ctx.call_marker:
            env[MARKER] = ctx.call_marker
        if self.env_policy.trace_parent is not None and ctx.call:
            env["TRACEPARENT"] = self.env_policy.trace_parent(ctx.call)
        heard, report = os.pipe()
        held: list[int] = []
        try:
            argv = self._argv(args.command, ctx, env, report, args.network, held)
            process = await spawn(argv, cwd=ctx.workspace.root, env=env, pass_fds=(report, *held))
        except BaseException:
            os.close(heard)
            raise
        finally:
            os.close(report)
            for fd in held:
                os.close(fd)
        return process, heard


def _result(process: Started, text: str) -> ToolOutput:
    code = process.returncode
    text = f"exit code {code}\n{text}"
    return ToolOutput(text, exit_code=code) if code == 0 else ToolOutput.error(text, code)


async def _in_background(process: Started, output: _Output, heard: int) -> None:
    """A background call's command: it runs until the shell has exited, its output pipe
    has closed and no process of its group is left (what it started in the background
    runs on, as asked); cancelled (its task cancelled, its deadline passed, the session
    stopping), the whole group is killed."""
    assert process.stdout is not None
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(output.read, process.stdout)
            await process.wait()
            await output.closed.wait()
            while _group_alive(process.pid):  # noqa: ASYNC110 (another program: polled)
                await trio.sleep(GROUP_POLL_SECONDS)
    finally:
        _kill_group(process.pid)
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                await process.wait()
            await process.stdout.aclose()
        _heard(heard)


def pin(workspace: Workspace, parts: tuple[str, ...], is_file: bool, held: list[int]) -> Place:
    """What a write scope names, as the sandbox grants it: reached from the workspace
    root without following a link (a scope directory that has become one is refused, so
    a task cannot widen its next command's sandbox), made if missing (a directory, or an
    empty file), held open in `held`."""
    shown = "/".join(parts) or "."
    with workspace.directory(parts if not is_file else parts[:-1], create=True) as parent:
        if not is_file:
            held.append(os.dup(parent))
            return Place(workspace.root.joinpath(*parts), held[-1])
        name = parts[-1]
        flags = os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(name, flags | os.O_PATH, dir_fd=parent)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                made = os.open(
                    name, flags | os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666, dir_fd=parent
                )
                os.close(made)
            fd = os.open(name, flags | os.O_PATH, dir_fd=parent)
        held.append(fd)
        if stat.S_ISLNK(os.fstat(fd).st_mode):
            raise ToolFailed(f"write scope {shown}: a link; refused")
        return Place(workspace.root.joinpath(*parts), fd)


def _group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class _Output:
    """A command's combined output, the first `cap` bytes kept, and when its pipe closed
    (every process holding it has exited or closed it); each chunk also given to `copy`
    as it comes, when there is one (a background call's output file)."""

    def __init__(self, cap: int, copy: Callable[[bytes], None] | None = None) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.total = 0
        self.closed = trio.Event()
        self._copy = copy

    def redirect(self, copy: Callable[[bytes], None]) -> None:
        """From now on each chunk goes to `copy` too, what was kept so far first (a call
        moved to the background: its task's output file)."""
        copy(bytes(self.kept))
        self._copy = copy

    async def read(self, stream: trio.abc.ReceiveStream) -> None:
        async for chunk in stream:
            if self._copy is not None:
                self._copy(bytes(chunk))
            self.total += len(chunk)
            if len(self.kept) < self.cap:
                self.kept += chunk[: self.cap - len(self.kept)]
        self.closed.set()

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.total > len(self.kept):
            text += f"\n[output truncated: {self.total} bytes, showing the first {len(self.kept)}]"
        return text


def _heard(fd: int) -> bool:
    """Whether the sandbox wrote to the report pipe (it has exited: this never waits)."""
    try:
        os.set_blocking(fd, False)
        return os.read(fd, 1) == b"1"
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def _kill_group(pid: int) -> bool:
    """SIGKILL to the process group `pid`; whether any process was left in it."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


MARKER = "ORCHESTRATOR_CALL"


def marked(marker: str, proc: Path = Path("/proc")) -> list[int]:
    """The processes whose environment carries `marker` (a call's, or with a trailing
    `/`, a session's): the leftovers of a call whose orchestrator died, sandboxed or not.
    Reads /proc, so it finds nothing where there is none (not Linux)."""
    needle = f"{MARKER}={marker}".encode()
    whole = needle + (b"" if marker.endswith("/") else b"\0")
    found = []
    for entry in proc.glob("[0-9]*"):
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue  # gone, or not ours to read
        if (b"\0" + environ).find(b"\0" + whole) >= 0:
            found.append(int(entry.name))
    return found


def kill_marked(marker: str, proc: Path = Path("/proc")) -> int:
    """Kill the process groups of every process `marked` with `marker`; the number of
    processes found."""
    pids = marked(marker, proc)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(os.getpgid(pid), signal.SIGKILL)
    return len(pids)
