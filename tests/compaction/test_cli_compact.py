"""Compaction by hand: `orchestrator sessions compact` on a stopped session (through the
real command line, with a scripted model), what `sessions show` says of each context
afterwards, and `Team.compact` on a live one."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from orchestrator.errors import CompactionFailed
from orchestrator.loop.compaction import ContextCompacted
from orchestrator.messages import UserMessage
from orchestrator.models.base import COMPACTOR, ModelRequest
from orchestrator.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from orchestrator.session.live import create_session, load_state, open_session
from orchestrator.state.events import ListSink
from orchestrator.team.compactor import SUMMARY_HEADER
from orchestrator.team.drive import RunSettings, drive
from orchestrator.team.runtime import Team
from orchestrator.tools import PermissionPolicy, approve_all, workspace_tools
from tests.cli.test_cli import ROOT, orchestrator, sessions_root  # noqa: F401  (an autouse fixture)

SUMMARY = "\n\n".join(
    [
        "## Goal and constraints\nRead the files f0, f1 and f2.",
        "## User messages\n> read the files",
        "## Decisions\nRead them one by one.",
        "## Files touched\nNone.",
        "## Errors and fixes\nNone.",
        "## Current work\nAll three are read.",
        "## Next step\nSay so.",
    ]
)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for index in range(3):
        (workspace / f"f{index}.txt").write_text(f"line {index}\n" * 500)  # 3,500 characters
    return workspace


# --- the library: Team.compact on a live session ------------------------------------------


def reader(requests: list[ModelRequest], asked: trio.Event) -> ScriptedModel:
    """A main agent that reads three files, then answers; `asked` is set at its second
    model call, when the test asks for a compaction."""

    def respond(request: ModelRequest) -> ScriptedReply:
        requests.append(request)
        if request.role == COMPACTOR:
            return ScriptedReply(text=SUMMARY)
        if request.step == 1:
            asked.set()
        if request.step < 3:
            arguments = {"path": f"f{request.step}.txt"}
            return ScriptedReply(tool_calls=(ScriptedCall(name="read_file", arguments=arguments),))
        return ScriptedReply(text="done")

    return ScriptedModel(respond)


def settings_of(model: ScriptedModel, teams: list[Team]) -> RunSettings:
    return RunSettings(
        model=model,
        tools=workspace_tools(),
        ui=ListSink(),
        policy=PermissionPolicy(),
        approve=approve_all,
        on_team=teams.append,
    )


async def test_team_compact_compacts_a_live_agent_at_its_next_round(
    tmp_path: Path, files: Path
) -> None:
    root = tmp_path / "sessions"
    sid, directory = create_session(root, goal="read the files", model="m", workspace=files)
    requests: list[ModelRequest] = []
    asked = trio.Event()
    teams: list[Team] = []
    got: list[ContextCompacted | None] = []

    async def ask() -> None:
        await asked.wait()
        with pytest.raises(ValueError, match="no agent 'nobody' has a context"):
            await teams[0].compact("nobody")
        got.append(await teams[0].compact("main"))

    async with open_session(root, sid, warn=pytest.fail) as live, trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        result = await drive(live, settings_of(reader(requests, asked), teams))
    assert result.status == "completed", result.detail
    [record] = got
    assert record is not None
    assert (record.reason, record.method) == ("by_hand", "summary")
    # Made at the round boundary after the second call's results: the third call is the
    # first to see the checkpoint, and nothing of the second round is lost.
    calls = [r for r in requests if r.role != COMPACTOR]
    assert [r.step for r in requests if r.role == COMPACTOR] == [0]
    assert requests.index(next(r for r in requests if r.role == COMPACTOR)) == 2
    third = list(calls[2].messages)
    assert third == list(record.messages)
    assert any(isinstance(m, UserMessage) and m.content.startswith(SUMMARY_HEADER) for m in third)
    state = load_state(directory, warn=pytest.fail)
    assert (state.agents["main"].compactions, state.status) == (1, "completed")


async def test_team_compact_returns_none_when_the_agent_takes_no_more_rounds(
    tmp_path: Path, files: Path
) -> None:
    root = tmp_path / "sessions"
    sid, _ = create_session(root, goal="read the files", model="m", workspace=files)
    teams: list[Team] = []
    got: list[ContextCompacted | None] = []
    last = trio.Event()

    def respond(request: ModelRequest) -> ScriptedReply:
        last.set()  # its only call: the turn ends with it, and so does the session
        return ScriptedReply(text="done")

    async def ask() -> None:
        await last.wait()
        got.append(await teams[0].compact())

    async with open_session(root, sid, warn=pytest.fail) as live, trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        result = await drive(live, settings_of(ScriptedModel(respond), teams))
    assert result.status == "completed"
    assert got == [None]


async def test_a_compaction_by_hand_that_cannot_fit_fails_to_the_asker_not_the_agent(
    tmp_path: Path, files: Path
) -> None:
    """With no window known, a compaction by hand aims at the context's own size; a
    context hardly bigger than its system prompt cannot shrink below it: the asker gets
    `CompactionFailed`, and the agent goes on with its context as it was."""
    root = tmp_path / "sessions"
    sid, directory = create_session(root, goal="list the files", model="m", workspace=files)
    teams: list[Team] = []
    asked = trio.Event()
    errors: list[Exception] = []
    steps: list[int] = []

    def respond(request: ModelRequest) -> ScriptedReply:
        steps.append(request.step)
        if request.step == 0:
            asked.set()
            return ScriptedReply(tool_calls=(ScriptedCall(name="list_files", arguments={}),))
        return ScriptedReply(text="done")

    async def ask() -> None:
        await asked.wait()
        try:
            await teams[0].compact()
        except CompactionFailed as exc:
            errors.append(exc)

    async with open_session(root, sid, warn=pytest.fail) as live, trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        result = await drive(live, settings_of(ScriptedModel(respond), teams))
    [error] = errors
    assert "does not fit" in str(error)
    assert result.status == "completed"
    assert steps == [0, 1]
    assert load_state(directory, warn=pytest.fail).agents["main"].compactions == 0
