"""Through the real team: a worker whose write scope is `a/` makes a symlink inside it with
the shell, then writes and edits through it; both are refused, the target is unchanged,
and the owner gets a `risk_alert`."""

from __future__ import annotations

import pytest

from orchestrator.team.queries import MAIN
from orchestrator.tools import Workspace
from tests.scenes import Scene, c, delegates_and_waits, reply, steps
from tests.team.engines import Engine


@pytest.mark.parametrize(
    ("command", "path", "resolved"),
    [
        ("ln -s ../b a/out", "a/out/f.txt", "b/f.txt"),  # a symlinked directory
        ("ln -s ../b/f.txt a/f.txt", "a/f.txt", "b/f.txt"),  # the file itself
        ("ln -s .. a/up", "a/up/b/f.txt", "b/f.txt"),  # up to the root and down again
    ],
)
async def test_a_worker_cannot_write_through_a_link_it_made_out_of_its_scope(
    workspace: Workspace, command: str, path: str, resolved: str, engine: Engine
) -> None:
    (workspace.root / "a").mkdir()
    (workspace.root / "b").mkdir()
    (workspace.root / "b" / "f.txt").write_text("keep\n")
    scene = Scene(
        workspace,
        {
            MAIN: delegates_and_waits(description="a", prompt=".", write_scope=["a/"]),
            "t1": steps(
                reply("", c("shell", command=command)),
                reply(
                    "",
                    c("write_file", path=path, content="changed\n"),
                    c("edit_file", path=path, old_text="keep", new_text="changed"),
                ),
                reply("", c("complete", summary="tried")),
            ),
        },
        engine=engine,
    )
    await scene.run()
    assert (workspace.root / "b" / "f.txt").read_text() == "keep\n"
    results = [m for m in scene.state.agents["t1"].messages if m.role == "tool"]
    assert results[0].status == "ok"  # the link itself is no file change
    for result, tool in zip(results[1:3], ("write_file", "edit_file"), strict=True):
        assert result.status == "error"
        assert result.changed == ()
        assert result.content == (
            f"{tool} refused: {path} resolves to {resolved}, outside this task's write scope "
            "(a/); ask your owner with request_direction_change if you need it"
        )
    alerts = [m.summary for m in scene.mail.values() if m.kind == "risk_alert"]
    assert alerts == [
        f"its {tool} to {path} was refused: the path is inside its write scope (a/) as "
        f"written but resolves to {resolved} (a symlink or `..`)"
        for tool in ("write_file", "edit_file")
    ]
    assert scene.state.tasks.get("t1").completion.unlisted_changes == ()


async def test_a_link_out_of_the_workspace_is_refused_and_reported(
    workspace: Workspace, engine: Engine
) -> None:
    outside = workspace.root.parent / "outside"
    outside.mkdir()
    (workspace.root / "a").mkdir()
    scene = Scene(
        workspace,
        {
            MAIN: delegates_and_waits(description="a", prompt=".", write_scope=["a/"]),
            "t1": steps(
                reply("", c("shell", command=f"ln -s {outside} a/out")),
                reply("", c("write_file", path="a/out/f.txt", content="x")),
                reply("", c("complete", summary="tried")),
            ),
        },
        engine=engine,
    )
    await scene.run()
    assert list(outside.iterdir()) == []
    write = [m for m in scene.state.agents["t1"].messages if m.role == "tool"][1]
    assert write.status == "error"
    assert write.content.startswith("write_file refused: path 'a/out/f.txt' is outside the ")
    alerts = [m.summary for m in scene.mail.values() if m.kind == "risk_alert"]
    assert alerts == [
        "its write_file to a/out/f.txt was refused: the path is inside its write scope (a/) "
        "as written but leads outside the workspace (a symlink or `..`)"
    ]
