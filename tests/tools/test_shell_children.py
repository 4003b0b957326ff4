"""A shell command that leaves a child running returns when the shell exits: after a short
grace for output, the process group is killed, and the result says so. A command that
keeps running in the foreground still runs into its timeout.

These run real processes; the timeouts given are generous bounds a broken tool would run
into (and fail the assertions on its result), not what is asserted. They run unsandboxed,
to check the pids the commands print (a sandboxed command sees its own PID namespace;
tests/tools/test_sandbox.py checks the same there)."""

from __future__ import annotations

import pytest

from orchestrator.tools import Sandbox, Shell, ToolContext, Workspace
from orchestrator.tools.shell import LEFTOVERS, ShellArgs
from tests.scenes import alive, gone_soon

UNSANDBOXED = Shell(sandbox=Sandbox(level="off"))


@pytest.fixture
def ctx(workspace: Workspace) -> ToolContext:
    return ToolContext(workspace=workspace)


@pytest.mark.parametrize(
    "child",
    [
        "(sleep 100; touch LATE) &",  # holds the output pipe
        "(sleep 100; touch LATE) >/dev/null 2>&1 &",  # does not
        "nohup sh -c 'sleep 100; touch LATE' >/dev/null 2>&1 &",  # ignores SIGHUP
    ],
)
async def test_a_command_returns_when_the_shell_exits_and_its_children_are_stopped(
    workspace: Workspace, ctx: ToolContext, child: str
) -> None:
    command = f"{child} echo $! > child.pid; echo started"
    out = await UNSANDBOXED.run(ShellArgs(command=command, timeout=60), ctx)
    assert (out.status, out.exit_code) == ("ok", 0)
    assert out.content == f"exit code 0\nstarted\n\n{LEFTOVERS}"
    pid = int((workspace.root / "child.pid").read_text())
    assert gone_soon(pid)
    assert not (workspace.root / "LATE").exists()


async def test_a_command_that_leaves_nothing_running_says_nothing_of_it(
    workspace: Workspace, ctx: ToolContext
) -> None:
    out = await Shell().run(ShellArgs(command="sleep 0 & wait; echo done"), ctx)
    assert out.content == "exit code 0\ndone\n"
    failed = await Shell().run(ShellArgs(command="echo no; exit 4"), ctx)
    assert (failed.status, failed.exit_code, failed.content) == ("error", 4, "exit code 4\nno\n")


@pytest.mark.parametrize(
    "command",
    ["sleep 30 & echo $! > child.pid; wait", "echo $$ > child.pid; exec sleep 30"],
)
async def test_a_command_running_in_the_foreground_still_times_out(
    workspace: Workspace, ctx: ToolContext, command: str
) -> None:
    out = await UNSANDBOXED.run(ShellArgs(command=command, timeout=0.5), ctx)
    assert (out.status, out.exit_code) == ("error", None)
    assert out.content.startswith("timed out after 0.5s; killed")
    pid = int((workspace.root / "child.pid").read_text())
    assert gone_soon(pid)
    assert not alive(pid)
