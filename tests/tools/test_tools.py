"""Workspace tools: confinement, caps, timeouts."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from orchestrator.errors import ToolFailed, WorkspaceEscape
from orchestrator.tools import (
    EditFile,
    Grep,
    ListFiles,
    ReadFile,
    Sandbox,
    Shell,
    ToolContext,
    Workspace,
    WriteFile,
)
from orchestrator.tools.files import EditFileArgs, ReadFileArgs, WriteFileArgs
from orchestrator.tools.search import GrepArgs, ListFilesArgs
from orchestrator.tools.shell import ShellArgs
from tests.scenes import gone_soon


@pytest.fixture
def ctx(workspace: Workspace) -> ToolContext:
    return ToolContext(workspace=workspace)


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/passwd", "/"])
def test_paths_outside_the_workspace_are_refused(workspace: Workspace, path: str) -> None:
    with pytest.raises(WorkspaceEscape, match="outside the workspace"):
        workspace.resolve(path)


def test_absolute_path_inside_is_allowed(workspace: Workspace) -> None:
    assert workspace.resolve(str(workspace.root / "a.txt")) == workspace.root / "a.txt"
    assert workspace.resolve("sub/../b") == workspace.root / "b"


async def test_symlink_leading_out_is_refused(
    workspace: Workspace, ctx: ToolContext, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (workspace.root / "link").symlink_to(secret)
    (workspace.root / "dirlink").symlink_to(tmp_path)
    with pytest.raises(WorkspaceEscape):
        await ReadFile().run(ReadFileArgs(path="link"), ctx)
    with pytest.raises(WorkspaceEscape):
        await WriteFile().run(WriteFileArgs(path="dirlink/new.txt", content="x"), ctx)
    assert not (tmp_path / "new.txt").exists()
    listing = await ListFiles().run(ListFilesArgs(), ctx)
    assert "link" not in listing.content
    found = await Grep().run(GrepArgs(pattern="secret"), ctx)
    assert "top secret" not in found.content


async def test_read_file_line_range_and_cap(workspace: Workspace, ctx: ToolContext) -> None:
    (workspace.root / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = await ReadFile().run(ReadFileArgs(path="f.txt", start_line=3, end_line=4), ctx)
    assert out.content == "line 3\nline 4\n"
    (workspace.root / "big.txt").write_text("x" * 300_000)
    big = await ReadFile().run(ReadFileArgs(path="big.txt"), ctx)
    assert "[truncated at 262144 bytes, in line 1, of a 300000-byte file" in big.content
    with pytest.raises(ToolFailed, match="no such file"):
        await ReadFile().run(ReadFileArgs(path="missing.txt"), ctx)


async def test_edit_file_requires_a_unique_match(workspace: Workspace, ctx: ToolContext) -> None:
    (workspace.root / "f.py").write_text("a = 1\nb = 1\n")
    with pytest.raises(ToolFailed, match="not found"):
        await EditFile().run(EditFileArgs(path="f.py", old_text="c = 1", new_text="x"), ctx)
    with pytest.raises(ToolFailed, match="occurs 2 times"):
        await EditFile().run(EditFileArgs(path="f.py", old_text="= 1", new_text="= 2"), ctx)
    await EditFile().run(EditFileArgs(path="f.py", old_text="b = 1", new_text="b = 2"), ctx)
    assert (workspace.root / "f.py").read_text() == "a = 1\nb = 2\n"


async def test_grep_and_list(workspace: Workspace, ctx: ToolContext) -> None:
    (workspace.root / "pkg").mkdir()
    (workspace.root / "pkg" / "m.py").write_text("def f():\n    return 1\n")
    (workspace.root / "notes.md").write_text("nothing\n")
    assert (await Grep().run(GrepArgs(pattern=r"def \w+"), ctx)).content == "pkg/m.py:1:def f():"
    listing = await ListFiles().run(ListFilesArgs(pattern="**/*.py"), ctx)
    assert listing.content == "pkg/m.py"
    with pytest.raises(ToolFailed, match="bad regular expression"):
        await Grep().run(GrepArgs(pattern="("), ctx)


async def test_shell_reports_exit_code(ctx: ToolContext) -> None:
    ok = await Shell().run(ShellArgs(command="echo hello"), ctx)
    assert (ok.status, ok.content) == ("ok", "exit code 0\nhello\n")
    bad = await Shell().run(ShellArgs(command="echo oops >&2; exit 3"), ctx)
    assert (bad.status, bad.content) == ("error", "exit code 3\noops\n")


async def test_shell_runs_in_the_workspace(workspace: Workspace, ctx: ToolContext) -> None:
    out = await Shell().run(ShellArgs(command="pwd"), ctx)
    assert out.content.splitlines()[1] == str(workspace.root)


async def test_shell_timeout_kills_the_command(ctx: ToolContext) -> None:
    # A real subprocess needs a real (short) timeout; the child would run 30 s otherwise.
    out = await Shell().run(ShellArgs(command="echo started; sleep 30", timeout=0.3), ctx)
    assert out.status == "error"
    assert out.content.startswith("timed out after 0.3s; killed")
    assert "started" in out.content


async def test_shell_output_is_capped(ctx: ToolContext) -> None:
    out = await Shell(output_cap=1000).run(
        ShellArgs(command="head -c 50000 /dev/zero | tr '\\0' x"), ctx
    )
    assert out.status == "ok"
    assert "[output truncated: 50000 bytes, showing the first 1000]" in out.content
    assert out.content.splitlines()[1] == "x" * 1000


# --- read-only tools are bounded ----------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "socket"])
async def test_read_file_refuses_what_is_not_a_regular_file(
    workspace: Workspace, ctx: ToolContext, kind: str
) -> None:
    import os
    import socket

    path = workspace.root / "special"
    with socket.socket(socket.AF_UNIX) as server:
        if kind == "fifo":
            os.mkfifo(path)  # opening it for reading would wait for a writer forever
        else:
            server.bind(str(path))
        with pytest.raises(ToolFailed, match="not a regular file"):
            await ReadFile().run(ReadFileArgs(path="special"), ctx)
        # grep and list_files pass it by, without blocking either.
        listing = await ListFiles().run(ListFilesArgs(), ctx)
        assert "special" not in listing.content
        found = await Grep().run(GrepArgs(pattern="x"), ctx)
        assert found.content.startswith("no matches")


async def test_read_file_never_reads_a_huge_file_whole(
    workspace: Workspace, ctx: ToolContext
) -> None:
    # 1.5 GB of zeros with no newline (sparse: nothing is written to disk).
    with (workspace.root / "huge.bin").open("wb") as file:
        file.truncate(1_500_000_000)
    out = await ReadFile().run(ReadFileArgs(path="huge.bin"), ctx)
    assert len(out.content) < 300 * 1024
    assert "truncated at 262144 bytes, in line 1, of a 1500000000-byte file" in out.content
    # Asking for a line far in: it looks at most 64 MiB in and says so.
    far = await ReadFile().run(ReadFileArgs(path="huge.bin", start_line=2), ctx)
    assert "looks at most 64 MiB into a file" in far.content


async def test_read_file_line_range_of_many_lines_stops_at_the_range(
    workspace: Workspace, ctx: ToolContext
) -> None:
    (workspace.root / "lines.txt").write_text("".join(f"line {i}\n" for i in range(1, 100_001)))
    out = await ReadFile().run(ReadFileArgs(path="lines.txt", start_line=5, end_line=7), ctx)
    assert out.content == "line 5\nline 6\nline 7\n"


@pytest.mark.parametrize(
    "pattern",
    ["(a+)+$", "(a|aa)+$", "(x+x+)+y"],  # catastrophic backtracking on the line below
)
async def test_grep_gives_up_on_a_runaway_regex_instead_of_hanging(
    workspace: Workspace, ctx: ToolContext, pattern: str
) -> None:
    (workspace.root / "evil.txt").write_text("a" * 40 + "b\n" + "x" * 40 + "\n")
    with pytest.raises(ToolFailed, match="grep gave up after 1s"):
        await Grep(seconds=1).run(GrepArgs(pattern=pattern), ctx)


async def test_a_cancelled_grep_returns_at_once(workspace: Workspace, ctx: ToolContext) -> None:
    import trio

    (workspace.root / "evil.txt").write_text("a" * 40 + "b\n")
    with trio.move_on_after(0.5) as scope:
        await Grep(seconds=3600).run(GrepArgs(pattern="(a+)+$"), ctx)
    assert scope.cancelled_caught  # the child was killed; the call did not wait for it


async def test_listing_a_symlink_loop_ends(workspace: Workspace, ctx: ToolContext) -> None:
    (workspace.root / "d").mkdir()
    (workspace.root / "d" / "f.txt").write_text("x")
    (workspace.root / "d" / "loop").symlink_to(workspace.root / "d")
    out = await ListFiles().run(ListFilesArgs(), ctx)
    assert out.content == "d/f.txt"
    py = await ListFiles().run(ListFilesArgs(pattern="*.txt"), ctx)
    assert py.content.startswith("no files match")  # `*` stays in the top directory


async def test_a_command_leaves_nothing_running_behind(
    workspace: Workspace, ctx: ToolContext
) -> None:
    command = "sleep 30 & echo $! > bg.pid; echo hi"
    # Unsandboxed, to check the pid it prints (test_sandbox.py does the same sandboxed).
    out = await Shell(sandbox=Sandbox(level="off")).run(ShellArgs(command=command, timeout=1), ctx)
    assert "hi" in out.content
    background = int((workspace.root / "bg.pid").read_text())
    assert gone_soon(background)


def _running(env: dict[str, str], **options: Any) -> subprocess.Popen[bytes]:
    """A process that has said it runs, so /proc shows its environment: `Popen` returns
    once the child's exec has closed its descriptors, which is before the kernel sets the
    new image's environment (a scan in that gap reads it empty, about 1 time in 100)."""
    process = subprocess.Popen(
        ["sh", "-c", "echo up; read line"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        **options,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == b"up\n"
    return process


def test_kill_marked_finds_the_processes_of_a_call(workspace: Workspace, ctx: ToolContext) -> None:
    import dataclasses

    from orchestrator.tools.shell import MARKER, kill_marked

    session = f"S{uuid.uuid4().hex}"  # (the scan sees every process of the machine)
    marked = dataclasses.replace(ctx, session=session, call="7.0")
    assert marked.call_marker == f"{session}/main/7.0"
    # A process that outlived the orchestrator that started it, in a group of its own.
    env = {MARKER: marked.call_marker, "PATH": "/usr/bin:/bin"}
    orphan = _running(env, start_new_session=True)
    other = _running({**env, MARKER: f"{session}/main/8.0"})
    try:
        assert kill_marked(f"{session}/main/7.0") == 1
        assert orphan.wait(timeout=10) == -9
        assert other.poll() is None  # another call's process is left alone
    finally:
        for process in (other, orphan):
            process.kill()
            process.communicate()


def test_shell_recover_kills_what_a_cut_off_call_left_running(
    workspace: Workspace, ctx: ToolContext
) -> None:
    # The turn loop names no tool: stopping a cut-off command is the shell tool's recover.
    import dataclasses

    import trio

    from orchestrator.tools.shell import MARKER

    session = f"S{uuid.uuid4().hex}"  # (the scan sees every process of the machine)
    cut_off = dataclasses.replace(ctx, session=session, call="7.0")
    env = {MARKER: cut_off.call_marker, "PATH": "/usr/bin:/bin"}
    orphan = _running(env, start_new_session=True)
    other = _running({**env, MARKER: f"{session}/main/8.0"})
    try:
        # A foreground call: its processes killed, and the call left `interrupted`.
        assert trio.run(Shell().recover, ShellArgs(command="sleep 30"), cut_off) is None
        assert orphan.wait(timeout=10) == -9
        assert other.poll() is None
    finally:
        for process in (other, orphan):
            process.kill()
            process.communicate()


def test_a_calls_context_is_the_agents_with_the_call_tool_and_sink(workspace: Workspace) -> None:
    """`for_call` makes what `dataclasses.replace` would: every other field kept (each set
    here to something not its default, so a field it dropped would show)."""
    import dataclasses

    from orchestrator.session import MemorySession

    values = {
        "workspace": workspace,
        "agent": "t1",
        "session": "s1",
        "session_directory": workspace.root / "session",
        "call": "old",
        "write_scope": ("src",),
        "tool": "old_tool",
        "events": None,
        "background": object(),
        "output": print,
        "todos": object(),
        "model": object(),
    }
    assert {f.name for f in dataclasses.fields(ToolContext)} == set(values)
    context = ToolContext(**values)  # type: ignore[arg-type]
    sink = MemorySession()
    made = context.for_call("7.0", "read_file", sink)
    assert made == dataclasses.replace(context, call="7.0", tool="read_file", events=sink)
    assert type(made) is ToolContext
    assert made is not context
    assert (context.call, context.tool, context.events) == ("old", "old_tool", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.call = "8.0"  # type: ignore[misc]
