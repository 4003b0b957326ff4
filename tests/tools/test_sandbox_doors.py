"""The sandbox's doors of issue 37, each tried by a command that goes through it, with
the sandbox on and off (off shows the test can fail): socket files of the user's other
processes, trusted code and state inside the workspace (`.git`, `.venv`, orchestrator's
own installation), a write scope turned into a link, the session's directory, and the
policy the helper builds where Landlock guards socket files itself (ABI 9, which these
machines lack). These run real processes."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from orchestrator.errors import ToolFailed
from orchestrator.tools import Sandbox, Shell, ToolContext, Workspace
from orchestrator.tools import sandbox_exec as helper
from orchestrator.tools.sandbox import PACKAGE, read_only, socket_places
from orchestrator.tools.shell import ShellArgs
from orchestrator.tools.watch import changes, file_states

SANDBOXED = Shell(sandbox=Sandbox())
UNSANDBOXED = Shell(sandbox=Sandbox(level="off"))
if not Sandbox().active:  # pragma: no cover - this machine class has what it takes
    pytest.skip(f"no sandbox here: {Sandbox().unavailable()}", allow_module_level=True)

CONNECT = (
    'python -c "import socket, sys; s = socket.socket(socket.AF_UNIX); '
    "s.connect(sys.argv[1]); print('connected')\" "
)


async def run(shell: Shell, command: str, ctx: ToolContext) -> str:
    out = await shell.run(ShellArgs(command=command, timeout=30), ctx)
    return out.content


@pytest.mark.parametrize(
    ("level", "reached"),
    [("workspace", False), ("strict", False), ("off", True)],
)
async def test_a_socket_file_outside_the_workspace_is_out_of_reach(
    tmp_path: Path, workspace: Workspace, level: str, reached: bool
) -> None:
    # A person's `tmux -S /tmp/t.sock`: a listening socket in a directory of /tmp that
    # is not the workspace (the test's own tmp directory stands for /tmp).
    path = tmp_path / "t.sock"
    inner = workspace.root / "own.sock"
    with socket.socket(socket.AF_UNIX) as outside, socket.socket(socket.AF_UNIX) as own:
        outside.bind(str(path))
        outside.listen()
        own.bind(str(inner))
        own.listen()
        shell = Shell(sandbox=Sandbox(level=level))  # type: ignore[arg-type]
        ctx = ToolContext(workspace=workspace)
        said = await run(shell, CONNECT + str(path), ctx)
        assert ("connected" in said) == reached, said
        # The workspace's own sockets stay usable.
        assert "connected" in await run(shell, CONNECT + "own.sock", ctx)


def test_the_socket_places_are_the_users_and_those_the_environment_names(
    tmp_path: Path,
) -> None:
    environ = {
        "SSH_AUTH_SOCK": str(tmp_path / "agent.sock"),
        "TMUX": f"{tmp_path}/tmux-1/default,123,0",
        "DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path}/bus,guid=1",
        "DOCKER_HOST": "tcp://host:2375",
    }
    places = socket_places(environ, tmp_path)
    for expected in ("/tmp", "/run/user", str(tmp_path / ".ssh"), str(tmp_path / "bus")):
        assert expected in places
    assert str(tmp_path / "agent.sock") in places  # the file: its directory is the home
    assert f"{tmp_path}/tmux-1/default" in places
    assert str(tmp_path) not in places  # never the home itself
    assert not any(p.startswith("tcp") for p in places)


@pytest.mark.parametrize("sandboxed", [True, False], ids=["on", "off"])
async def test_git_and_a_venv_in_the_workspace_are_read_only(
    workspace: Workspace, sandboxed: bool
) -> None:
    root = workspace.root
    (root / ".git/hooks").mkdir(parents=True)
    (root / ".git/config").write_text("[core]\n")
    (root / ".venv/bin").mkdir(parents=True)
    (root / ".venv/bin/activate").write_text("# activate\n")
    command = (
        "echo '\tfsmonitor = ./evil' >> .git/config; echo evil > .git/hooks/pre-commit; "
        "echo evil >> .venv/bin/activate; rm -rf .git .venv/bin; echo ok > mine.txt"
    )
    await run(SANDBOXED if sandboxed else UNSANDBOXED, command, ToolContext(workspace=workspace))
    assert (root / "mine.txt").read_text() == "ok\n"  # the workspace itself stays writable
    kept = [
        (root / ".git/config").exists() and (root / ".git/config").read_text() == "[core]\n",
        (root / ".git/hooks").exists() and not (root / ".git/hooks/pre-commit").exists(),
        (root / ".venv/bin/activate").exists(),
    ]
    assert kept == [sandboxed] * 3


@pytest.mark.parametrize(
    ("agent", "scope", "git_written"),
    [("main", None, True), ("t1", (".",), False)],
    ids=["main-agent", "subagent"],
)
async def test_git_is_written_where_the_person_allows_it_for_the_main_agent_only(
    workspace: Workspace, agent: str, scope: tuple[str, ...] | None, git_written: bool
) -> None:
    root = workspace.root
    (root / ".git").mkdir()
    (root / ".venv").mkdir()
    allowed = Shell(sandbox=Sandbox(writable=(".git",)))  # [shell] writable = [".git"]
    ctx = ToolContext(workspace=workspace, agent=agent, write_scope=scope)
    await run(allowed, "echo x > .git/HEAD; echo y > .venv/z; echo ok > mine.txt", ctx)
    assert (root / "mine.txt").exists()
    assert ((root / ".git/HEAD").exists(), (root / ".venv/z").exists()) == (git_written, False)


@pytest.mark.parametrize("sandboxed", [True, False], ids=["on", "off"])
async def test_a_scoped_task_writes_nothing_under_its_node_modules(
    workspace: Workspace, sandboxed: bool
) -> None:
    (workspace.root / "a/node_modules/x").mkdir(parents=True)
    ctx = ToolContext(workspace=workspace, agent="t1", write_scope=("a/",))
    await run(
        SANDBOXED if sandboxed else UNSANDBOXED,
        "echo evil > a/node_modules/x/index.js; echo ok > a/mine.txt",
        ctx,
    )
    assert (workspace.root / "a/mine.txt").exists()
    assert (workspace.root / "a/node_modules/x/index.js").exists() != sandboxed


async def test_orchestrators_own_installation_inside_the_workspace_is_read_only() -> None:
    # The workspace is the checkout orchestrator runs from (an editable install).
    checkout = Workspace(PACKAGE.parent)
    target = PACKAGE / "tools" / "written-by-a-command"
    try:
        said = await run(SANDBOXED, f"echo x > {target}; echo done", ToolContext(checkout))
        assert "done" in said
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)
    assert str(PACKAGE) in read_only([PACKAGE.parent], scoped=False)
    assert str(PACKAGE) not in read_only([PACKAGE.parent / "tests"], scoped=False)


def test_with_the_sandbox_off_the_change_check_sees_git_and_venv_by_their_metadata(
    workspace: Workspace,
) -> None:
    root = workspace.root
    (root / ".git/hooks").mkdir(parents=True)
    (root / ".git/config").write_text("[core]\n")
    (root / "node_modules/x").mkdir(parents=True)
    before = file_states(root)
    assert before is not None
    assert {".git", "node_modules"} <= before.keys()
    assert not any(p.startswith(".git/") for p in before)  # not walked
    (root / ".git/config").write_text("[core]\n\tfsmonitor = evil\n")
    (root / ".git/hooks/pre-commit").write_text("evil")
    (root / "node_modules/x/y.js").write_text("")  # a directory's direct entry is seen
    after = file_states(root)
    assert after is not None
    assert changes(before, after) == [".git", "node_modules"]


async def test_a_scope_directory_turned_into_a_link_does_not_widen_the_sandbox(
    workspace: Workspace,
) -> None:
    (workspace.root / "a").mkdir()
    ctx = ToolContext(workspace=workspace, agent="t1", write_scope=("a/x",))
    relink = "cd a && rm -rf x && ln -s .. x"
    # `a/x` is a directory the sandbox grants (made), not its parent: it cannot be
    # turned into a link from inside.
    await run(SANDBOXED, relink, ctx)
    assert (workspace.root / "a/x").is_dir()
    assert not (workspace.root / "a/x").is_symlink()
    # Made a link all the same (unsandboxed), it is refused, not followed to the root.
    await run(UNSANDBOXED, relink, ctx)
    assert (workspace.root / "a/x").is_symlink()
    with pytest.raises(ToolFailed, match="write scope a/x: a link; refused"):
        await SANDBOXED.run(ShellArgs(command="echo wide > top.txt"), ctx)
    assert not (workspace.root / "top.txt").exists()
    await run(UNSANDBOXED, "echo wide > top.txt", ctx)  # (what it would have done)
    assert (workspace.root / "top.txt").exists()


@pytest.mark.parametrize("sandboxed", [True, False], ids=["on", "off"])
async def test_a_file_scope_grants_that_file_not_its_directory(
    workspace: Workspace, sandboxed: bool
) -> None:
    (workspace.root / "README.md").write_text("old\n")
    ctx = ToolContext(workspace=workspace, agent="t1", write_scope=("README.md", "new.txt"))
    await run(
        SANDBOXED if sandboxed else UNSANDBOXED,
        "echo mine > README.md; echo made > new.txt; echo other > other.txt",
        ctx,
    )
    assert (workspace.root / "README.md").read_text() == "mine\n"
    assert (workspace.root / "new.txt").read_text() == "made\n"  # made empty, then granted
    assert (workspace.root / "other.txt").exists() != sandboxed


@pytest.mark.parametrize("level", ["workspace", "strict", "off"])
async def test_the_session_directory_is_out_of_sight(tmp_path: Path, level: str) -> None:
    session = tmp_path / "sessions" / "s1"
    (session / "tasks").mkdir(parents=True)
    (session / "tasks" / "t1.output").write_text("a key: sk-secret\n")
    inside = session / "workspace"  # --session-workspace: the workspace inside it
    inside.mkdir()
    ctx = ToolContext(workspace=Workspace(inside), session_directory=session)
    shell = Shell(sandbox=Sandbox(level=level))  # type: ignore[arg-type]
    said = await run(shell, "cat ../tasks/t1.output; echo ok > w.txt; cat w.txt", ctx)
    assert ("sk-secret" in said) == (level == "off"), said
    assert (inside / "w.txt").read_text() == "ok\n"


def policy(*lists: list[str]) -> helper.Policy:
    argv = ["workspace", "0", "-1", "1"]
    for paths in lists:
        argv += [str(len(paths)), *paths]
    return helper.Policy([*argv, "--", "true"])


def test_where_landlock_guards_socket_files_it_does_so_and_nothing_is_hidden_for_them() -> None:
    # write, devices, read, hide, sockets, expose, readonly, unix
    made = policy(["/ws"], [], [], ["/s/1"], ["/tmp", "/run/user"], ["/ws"], [], ["/ws"])
    handled, _, rules = helper.ruleset(made, 9)
    assert handled & helper.RESOLVE_UNIX
    assert ("/ws", helper.RESOLVE_UNIX) in rules
    assert helper.hidden(made, 9) == ["/s/1"]
    handled7, _, rules7 = helper.ruleset(made, 7)
    assert not handled7 & helper.RESOLVE_UNIX
    assert all(not allowed & helper.RESOLVE_UNIX for _, allowed in rules7)
    assert helper.hidden(made, 7) == ["/s/1", "/tmp", "/run/user"]
    assert "Landlock (ABI 9)" in Sandbox().protection(abi=9)
    assert "hidden by the sandbox's mounts" in Sandbox().protection(abi=7)
