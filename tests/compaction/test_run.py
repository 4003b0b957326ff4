"""Compaction in whole sessions: a scripted session that crosses its model's window
several times runs to completion, its anchors exact after every compaction."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator import (
    ModelRequest,
    RunResult,
    ScriptedCall,
    ScriptedModel,
    ScriptedReply,
    SessionState,
    ToolResult,
    UserMessage,
    create_session,
    drive,
    load_state,
    open_session,
)
from orchestrator.loop.anchors import HEADER
from orchestrator.loop.compaction import Window
from orchestrator.loop.pruning import STUB_PREFIX
from orchestrator.models.base import COMPACTOR
from orchestrator.models.scripted import ScriptedWindow, default_summary
from orchestrator.session.live import JOURNAL
from orchestrator.session.replay import fold_records, read_snapshot
from orchestrator.store import scan_journal
from tests.scenes import run_settings

WINDOW = Window(6_000)
CLAIMED = ScriptedWindow(
    context=6_000
)  # 5,000 usable: compaction at 4,000 tokens, about 16,000 characters


def reader(rounds: int, requests: list[ModelRequest]) -> ScriptedModel:
    """A main agent that reads big files, `rounds` times, then finishes."""

    def respond(request: ModelRequest) -> ScriptedReply:
        requests.append(request)
        if request.role == COMPACTOR:
            return ScriptedReply(text=default_summary(request))
        if request.step < rounds:
            path = f"f{request.step % 4}.txt"
            return ScriptedReply(
                tool_calls=(ScriptedCall(name="read_file", arguments={"path": path}),)
            )
        return ScriptedReply(text="done")

    return ScriptedModel(respond, window=CLAIMED)


async def run(root: Path, session_id: str, model: ScriptedModel) -> RunResult:
    settings = run_settings(
        model,
    )
    async with open_session(root, session_id, warn=pytest.fail) as live:
        return await drive(live, settings)


async def test_a_session_crossing_its_window_compacts_and_completes(
    tmp_path: Path, files: Path
) -> None:
    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="read the files", model="m", workspace=files)
    requests: list[ModelRequest] = []
    result = await run(root, session_id, reader(30, requests))
    assert result.status == "completed", result.detail
    state = load_state(directory, warn=pytest.fail)
    main = state.agents["main"]
    assert main.compactions >= 3
    asks = [r for r in requests if r.role != COMPACTOR]
    assert max(r.messages.chars for r in asks) < WINDOW.usable * 4
    after = [r for r in asks if any(_anchored(m) for m in r.messages)]
    assert after, "no request carried the anchors"
    assert all("read the files" in _anchors(r) for r in after)
    assert main.steps == 31  # compaction's summary calls are not the agent's steps
    # The resume starts from the newest checkpoint: the snapshot points there, and the
    # context folded from there is the one the run had.
    scan = scan_journal(directory / JOURNAL)
    newest = max(f.fields()["seq"] for f in scan.records if f.fields()["k"] == "context_compacted")
    assert main.start == newest
    snapshot = read_snapshot(directory, warn=pytest.fail)
    assert snapshot is not None
    assert snapshot.agents["main"].start == newest
    assert snapshot.agents["main"].compactions == main.compactions
    replayed = SessionState()
    fold_records(replayed, scan)  # the whole journal, from its first record
    assert replayed.agents["main"].messages == main.messages


def _anchored(message: object) -> bool:
    return isinstance(message, UserMessage) and message.content.startswith(HEADER)


def _anchors(request: ModelRequest) -> str:
    return next(m.content for m in request.messages if _anchored(m))  # type: ignore[union-attr]


async def test_a_context_that_cannot_fit_even_compacted_blocks_the_session(
    tmp_path: Path, files: Path
) -> None:
    # The goal alone is over the window: the anchors carry it whole, so no checkpoint fits.
    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="g" * 30_000, model="m", workspace=files)
    requests: list[ModelRequest] = []
    result = await run(root, session_id, reader(3, requests))
    assert result.status == "blocked"
    assert "does not fit its model's window even compacted" in result.detail
    assert "larger" in result.advice
    assert not result.resume_helps
    assert requests == []  # nothing sent over the window, no summary paid for in vain
    state = load_state(directory, warn=pytest.fail)
    assert state.agents["main"].compactions == 0


async def test_a_pruned_output_is_read_back_by_its_ref(tmp_path: Path, files: Path) -> None:
    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="read the files", model="m", workspace=files)
    recalled: list[str] = []

    def respond(request: ModelRequest) -> ScriptedReply:
        if request.role == COMPACTOR:
            return ScriptedReply(text=default_summary(request))
        stubs = [
            m.content
            for m in request.messages
            if isinstance(m, ToolResult) and m.content.startswith(STUB_PREFIX)
        ]
        if stubs and not recalled:
            [ref] = re.findall(r'recall\("([\d.]+)"\)', stubs[0])
            recalled.append(ref)
            return ScriptedReply(tool_calls=(ScriptedCall(name="recall", arguments={"ref": ref}),))
        if request.step < 24:
            path = f"f{request.step % 4}.txt"
            call = ScriptedCall(name="read_file", arguments={"path": path})
            return ScriptedReply(tool_calls=(call,))
        return ScriptedReply(text="done")

    model = ScriptedModel(respond, window=ScriptedWindow(context=20_000))
    result = await run(root, session_id, model)
    assert result.status == "completed", result.detail
    assert recalled, "no output was pruned"
    compactions = [
        f.fields()
        for f in scan_journal(directory / JOURNAL).records
        if f.fields()["k"] == "context_compacted"
    ]
    assert compactions[0]["method"] == "pruned"
    state = load_state(directory, warn=pytest.fail)
    [answer] = [
        m for m in state.agents["main"].messages if isinstance(m, ToolResult) and m.name == "recall"
    ]
    assert answer.status == "ok"
    assert "line 0\n" * 3 in answer.content or "line 1\n" * 3 in answer.content
