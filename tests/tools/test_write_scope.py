"""Write scopes hold on where a path resolves: the file tools resolve symlinks and `..`
before they check the workspace and the scope, and open what they checked, through
directory descriptors, so a symlink swapped in after the check makes the call fail."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from orchestrator.errors import ScopeEscape, ToolFailed, WorkspaceEscape
from orchestrator.tools import EditFile, ReadFile, ToolContext, Workspace, WriteFile
from orchestrator.tools.files import (
    EditFileArgs,
    ReadFileArgs,
    WriteFileArgs,
    _edit,
    _read_lines,
    write_target,
)

SCOPE = ("a/",)


@pytest.fixture
def ctx(workspace: Workspace) -> ToolContext:
    """A task's context whose scope is `a/`, over a workspace with `a/` and `b/f.txt`."""
    (workspace.root / "a").mkdir()
    (workspace.root / "b").mkdir()
    (workspace.root / "b" / "f.txt").write_text("keep\n")
    return ToolContext(workspace=workspace, agent="t1", write_scope=SCOPE)


async def write_or_edit(tool: str, path: str, ctx: ToolContext) -> None:
    if tool == "write_file":
        await WriteFile().run(WriteFileArgs(path=path, content="changed\n"), ctx)
    else:
        await EditFile().run(EditFileArgs(path=path, old_text="keep", new_text="changed"), ctx)


TOOLS = pytest.mark.parametrize("tool", ["write_file", "edit_file"])


@TOOLS
@pytest.mark.parametrize(
    ("link", "to", "path"),
    [
        ("a/out", "../b", "a/out/f.txt"),  # a symlinked directory component
        ("a/f.txt", "../b/f.txt", "a/f.txt"),  # the file itself, a symlink elsewhere
        ("a/deep", "..", "a/deep/b/f.txt"),  # a link up to the root, then down
    ],
)
async def test_a_link_in_the_scope_to_elsewhere_in_the_workspace_is_refused(
    ctx: ToolContext, tool: str, link: str, to: str, path: str
) -> None:
    root = ctx.workspace.root
    (root / link).symlink_to(to)
    with pytest.raises(ScopeEscape, match=f"{path} resolves to b/f.txt, outside") as caught:
        await write_or_edit(tool, path, ctx)
    assert (caught.value.written, caught.value.resolved) == (path, "b/f.txt")
    assert (root / "b" / "f.txt").read_text() == "keep\n"
    assert sorted(p.name for p in (root / "b").iterdir()) == ["f.txt"]  # no temporary file


@TOOLS
async def test_a_link_in_the_scope_to_outside_the_workspace_is_refused(
    ctx: ToolContext, tool: str, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("keep\n")
    (ctx.workspace.root / "a" / "out").symlink_to(outside)
    with pytest.raises(WorkspaceEscape, match="outside the workspace"):
        await write_or_edit(tool, "a/out/f.txt", ctx)
    assert (outside / "f.txt").read_text() == "keep\n"
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]


@TOOLS
@pytest.mark.parametrize("path", ["a/../b/f.txt", "a/x/../../b/f.txt", "./b/f.txt"])
async def test_a_path_climbing_out_of_the_scope_is_refused(
    ctx: ToolContext, tool: str, path: str
) -> None:
    with pytest.raises(ScopeEscape, match=f"{path} is outside this task's write scope \\(a/\\)"):
        await write_or_edit(tool, path, ctx)
    assert (ctx.workspace.root / "b" / "f.txt").read_text() == "keep\n"


@TOOLS
async def test_a_link_that_stays_in_the_scope_writes_the_file_it_names(
    ctx: ToolContext, tool: str
) -> None:
    root = ctx.workspace.root
    (root / "a" / "real.txt").write_text("keep\n")
    (root / "a" / "alias.txt").symlink_to("real.txt")
    (root / "b" / "into-a").symlink_to("../a")  # written outside, resolves inside: allowed
    for path in ("a/alias.txt", "b/into-a/real.txt"):
        (root / "a" / "real.txt").write_text("keep\n")
        await write_or_edit(tool, path, ctx)
        assert (root / "a" / "real.txt").read_text() == "changed\n"
    assert (root / "a" / "alias.txt").is_symlink()  # the file was replaced, not the link


async def test_the_result_names_the_resolved_path_it_changed(ctx: ToolContext) -> None:
    (ctx.workspace.root / "a" / "alias.txt").symlink_to("real.txt")
    out = await WriteFile().run(WriteFileArgs(path="a/alias.txt", content="x"), ctx)
    assert out.changed == ("a/real.txt",)
    (ctx.workspace.root / "a" / "n.txt").write_text("keep")
    args = EditFileArgs(path="./a/n.txt", old_text="keep", new_text="x")
    assert (await EditFile().run(args, ctx)).changed == ("a/n.txt",)


# --- the race: the path changes between the check and the open -----------------------------


def swap_for_link(path: Path, to: str) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    path.symlink_to(to)


def test_a_directory_swapped_for_a_link_after_the_check_fails_the_write(ctx: ToolContext) -> None:
    workspace = ctx.workspace
    (workspace.root / "a" / "sub").mkdir()
    target = workspace.writable("a/sub/f.txt", SCOPE)  # checked: a real directory
    swap_for_link(workspace.root / "a" / "sub", "../b")
    with pytest.raises(ToolFailed, match="a/sub is a symlink, which was not there"):
        write_target(workspace, target, b"changed\n")
    assert (workspace.root / "b" / "f.txt").read_text() == "keep\n"
    # A directory the write would make, made a link meanwhile: the same.
    target = workspace.writable("a/new/f.txt", SCOPE)
    (workspace.root / "a" / "new").symlink_to("../b")
    with pytest.raises(ToolFailed, match="a/new is a symlink"):
        write_target(workspace, target, b"changed\n")
    assert (workspace.root / "b" / "f.txt").read_text() == "keep\n"


def test_a_file_swapped_for_a_link_after_the_check_is_neither_read_nor_written(
    ctx: ToolContext,
) -> None:
    workspace = ctx.workspace
    (workspace.root / "a" / "f.txt").write_text("keep\n")
    target = workspace.writable("a/f.txt", SCOPE)
    swap_for_link(workspace.root / "a" / "f.txt", "../b/f.txt")
    args = EditFileArgs(path="a/f.txt", old_text="keep", new_text="changed")
    swapped = re.escape("a/f.txt is a symlink, which was not there")
    with pytest.raises(ToolFailed, match=swapped):
        _edit(workspace, target, args)
    with pytest.raises(ToolFailed, match=swapped):
        write_target(workspace, target, b"changed\n")
    with pytest.raises(ToolFailed, match=swapped):
        _read_lines(workspace, target, ReadFileArgs(path="a/f.txt"), 1000)
    assert (workspace.root / "b" / "f.txt").read_text() == "keep\n"
    assert os.readlink(workspace.root / "a" / "f.txt") == "../b/f.txt"


def test_the_descriptor_walk_takes_plain_components_only(workspace: Workspace) -> None:
    for parts in (("..",), ("a", "."), ("a/b",), ("",)):
        with (
            pytest.raises(WorkspaceEscape, match="not a plain path component"),
            workspace.directory(parts),
        ):
            pass


async def test_read_file_outside_a_scope_still_reads_through_links_inside(
    ctx: ToolContext, tmp_path: Path
) -> None:
    root = ctx.workspace.root
    (root / "a" / "b-file").symlink_to("../b/f.txt")
    out = await ReadFile().run(ReadFileArgs(path="a/b-file"), ctx)
    assert out.content == "keep\n"  # reading is not scoped, only confined
    (tmp_path / "secret").write_text("s")
    (root / "a" / "secret").symlink_to(tmp_path / "secret")
    with pytest.raises(WorkspaceEscape):
        await ReadFile().run(ReadFileArgs(path="a/secret"), ctx)


def test_grep_reads_only_what_it_opened_inside_the_workspace(
    workspace: Workspace, tmp_path: Path
) -> None:
    """grep's child checks each file as opened: a link swapped in after the walk looked
    (here: there from the start, handed to the read as the walk would) is not read."""
    from orchestrator.tools.walk import _read_inside

    (tmp_path / "secret").write_text("top secret")
    (workspace.root / "in.txt").write_text("inside")
    (workspace.root / "out").symlink_to(tmp_path / "secret")
    (workspace.root / "alias").symlink_to("in.txt")
    assert _read_inside(workspace.root / "alias", workspace.root) == b"inside"
    with pytest.raises(OSError, match="leads outside the workspace"):
        _read_inside(workspace.root / "out", workspace.root)
    os.mkfifo(workspace.root / "fifo")
    with pytest.raises(OSError, match="not a regular file"):
        _read_inside(workspace.root / "fifo", workspace.root)
