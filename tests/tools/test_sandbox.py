"""Each guarantee of the shell's sandbox, proven by a command that tries to break it, with
the sandbox on and off (issue 20): writes outside the allowed directories, a listener on
the host's loopback, orchestrator's environment through /proc, a signal to orchestrator,
reads outside the workspace at `strict`, subagent scopes, and what a command leaves
running. These run real processes."""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

import pytest

from orchestrator import PermissionPolicy, Rule, ToolCall, ToolResult
from orchestrator.agent import run_turn
from orchestrator.tools import Sandbox, Shell, ToolContext, ToolRegistry, Workspace
from orchestrator.tools.sandbox import scope_places, scratch_directory
from orchestrator.tools.shell import LEFTOVERS, ShellArgs, marked
from tests.conftest import MakeDeps
from tests.scenes import call, scripted

SANDBOXED = Shell(sandbox=Sandbox())
UNSANDBOXED = Shell(sandbox=Sandbox(level="off"))
if not Sandbox().active:  # pragma: no cover - this machine class has what it takes
    pytest.skip(f"no sandbox here: {Sandbox().unavailable()}", allow_module_level=True)


@pytest.fixture
def ctx(workspace: Workspace) -> ToolContext:
    return ToolContext(workspace=workspace)


async def run(shell: Shell, command: str, ctx: ToolContext) -> str:
    out = await shell.run(ShellArgs(command=command, timeout=30), ctx)
    return out.content


@pytest.mark.parametrize("sandboxed", [True, False], ids=["on", "off"])
async def test_writes_go_only_beneath_the_workspace_and_the_scratch_directory(
    tmp_path: Path, workspace: Workspace, ctx: ToolContext, sandboxed: bool
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace.root / "link").symlink_to(outside)
    shell = SANDBOXED if sandboxed else UNSANDBOXED
    command = (
        f"echo a > {outside}/direct; echo b > link/through; echo c > in.txt; "
        'echo d > "$TMPDIR/scratch.txt"'
    )
    await run(shell, command, ctx)
    assert (workspace.root / "in.txt").read_text() == "c\n"
    wrote = sorted(p.name for p in outside.iterdir())
    assert wrote == ([] if sandboxed else ["direct", "through"])
    if sandboxed:
        assert (scratch_directory() / "scratch.txt").read_text() == "d\n"


async def test_tmp_outside_the_scratch_directory_is_refused(
    tmp_path: Path, ctx: ToolContext
) -> None:
    target = Path("/tmp") / f"orchestrator-test-{os.getpid()}-{tmp_path.name}"
    try:
        said = await run(SANDBOXED, f"echo x > {target}; echo $TMPDIR", ctx)
        assert not target.exists()
        assert str(scratch_directory()) in said
        await run(UNSANDBOXED, f"echo x > {target}", ctx)
        assert target.exists()
    finally:
        target.unlink(missing_ok=True)


@pytest.mark.parametrize(
    ("sandbox", "reached"),
    [(Sandbox(), False), (Sandbox(network=True), True), (Sandbox(level="off"), True)],
    ids=["closed", "allowed", "off"],
)
async def test_the_network_is_closed_unless_allowed(
    ctx: ToolContext, sandbox: Sandbox, reached: bool
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        command = (
            "python -c \"import socket; socket.create_connection(('127.0.0.1', "
            f"{port}), 5); print('connected')\""
        )
        said = await run(Shell(sandbox=sandbox), command, ctx)
    assert ("connected" in said) == reached, said


@pytest.mark.parametrize("sandboxed", [True, False], ids=["on", "off"])
async def test_orchestrator_and_its_environment_are_out_of_sight(
    ctx: ToolContext, sandboxed: bool
) -> None:
    me = os.getpid()  # orchestrator, as far as the command is concerned
    command = (
        f"echo parent=$PPID; cat /proc/{me}/environ; kill -0 {me} && echo signalled; "
        "ls /proc | grep -c '^[0-9]'"
    )
    said = await run(SANDBOXED if sandboxed else UNSANDBOXED, command, ctx)
    # $PPID: orchestrator, or the sandbox's own PID 1 (its /proc/$PPID/environ is the
    # command's own environment). /proc/PID/environ is the one orchestrator started with.
    assert f"parent={1 if sandboxed else me}\n" in said
    assert ("PATH=" in said) != sandboxed
    assert ("signalled" in said) != sandboxed
    processes = int(said.strip().splitlines()[-1])
    assert (processes <= 5) == sandboxed  # its own few: PID 1, the shell, ls, grep


async def test_a_subagents_writes_are_confined_to_its_scope_directories(
    workspace: Workspace,
) -> None:
    (workspace.root / "a").mkdir()
    (workspace.root / "b").mkdir()
    ctx = ToolContext(workspace=workspace, agent="t1", write_scope=("a/", "c/new.txt"))
    command = "echo 1 > a/x; echo 2 > b/x; echo 3 > top.txt; echo 4 > c/new.txt"
    await run(SANDBOXED, command, ctx)
    assert (workspace.root / "a/x").read_text() == "1\n"
    assert not (workspace.root / "b/x").exists()
    assert not (workspace.root / "top.txt").exists()
    # c/new.txt did not exist: the sandbox made it (empty), since a rule needs a file.
    assert (workspace.root / "c/new.txt").read_text() == "4\n"
    await run(UNSANDBOXED, "echo 2 > b/x", ctx)
    assert (workspace.root / "b/x").exists()
    assert scope_places(workspace.root, ("a/", "c/new.txt", "src/*.py", "d")) == [
        (("a",), False),
        (("c", "new.txt"), True),
        (("d",), False),
        (("src",), False),
    ]
    assert scope_places(workspace.root, None) == [((), False)]


@pytest.mark.parametrize("level", ["workspace", "strict"])
async def test_strict_reads_only_the_workspace_and_the_system(
    tmp_path: Path, ctx: ToolContext, workspace: Workspace, level: str
) -> None:
    # Outside the workspace and outside /tmp (where the socket files' hiding takes away
    # all but the workspace and the scratch directory; a clone of this repository may be
    # there too): a file in the home.
    with tempfile.NamedTemporaryFile("w", dir=Path.home(), prefix=".orchestrator-test-") as f:
        f.write("not for the command\n")
        f.flush()
        said = await _read_outside(Path(f.name), ctx, workspace, level)
    assert "its own" in said
    assert "42" in said  # the system and the Python that runs orchestrator stay readable
    assert ("not for the command" in said) == (level == "workspace")


async def _read_outside(private: Path, ctx: ToolContext, workspace: Workspace, level: str) -> str:
    (workspace.root / "own.txt").write_text("its own\n")
    return await run(
        Shell(sandbox=Sandbox(level=level)),  # type: ignore[arg-type]
        f"cat {private}; cat own.txt; python -c 'print(6 * 7)'",
        ctx,
    )


async def test_what_a_sandboxed_command_leaves_running_is_stopped(
    workspace: Workspace,
) -> None:
    ctx = ToolContext(workspace=workspace, session="s1", call="c1")
    out = await SANDBOXED.run(
        ShellArgs(command="(sleep 100; touch LATE) & echo started", timeout=30), ctx
    )
    assert out.content == f"exit code 0\nstarted\n\n{LEFTOVERS}"
    assert marked(ctx.call_marker) == []
    assert not (workspace.root / "LATE").exists()


async def test_where_the_sandbox_is_unavailable_commands_run_unsandboxed(
    tmp_path: Path, ctx: ToolContext
) -> None:
    sandbox = Sandbox(probe="unavailable")
    assert not sandbox.active
    assert "not sandboxed" in sandbox.describe()
    outside = tmp_path / "outside.txt"
    await run(Shell(sandbox=sandbox), f"echo x > {outside}", ctx)
    assert outside.exists()
    assert Sandbox().describe() == "sandboxed: workspace, no network"


@pytest.mark.parametrize(
    ("asks", "answer", "reached"),
    [(True, True, True), (True, False, False), (False, None, False)],
    ids=["approved", "refused", "not-asked-for"],
)
async def test_a_command_asks_for_the_network_each_time_even_where_the_shell_is_allowed(
    make_deps: MakeDeps, asks: bool, answer: bool | None, reached: bool
) -> None:
    asked: list[str] = []

    async def approve(c: ToolCall) -> bool:
        asked.append(c.arguments)
        assert answer is not None
        return answer

    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        command = (
            "python -c \"import socket; socket.create_connection(('127.0.0.1', "
            f"{port}), 5); print('connected')\""
        )
        arguments: dict[str, object] = (
            {"command": command, "network": True} if asks else {"command": command}
        )
        model = scripted({"tool_calls": [call("shell", **arguments)]}, {"text": "ok"})
        policy = PermissionPolicy(rules=[Rule("shell", "allow")])
        state, deps, _ = make_deps(
            model, tools=ToolRegistry([SANDBOXED]), policy=policy, approve=approve
        )
        await run_turn(state, deps)
    [result] = [m for m in state.messages if isinstance(m, ToolResult)]
    assert len(asked) == (1 if asks else 0)
    assert ("connected" in result.content) == reached, result.content
    if asks and not answer:
        assert result.status == "error"
        assert "not approved" in result.content
