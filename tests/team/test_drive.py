"""Recovery rules, in process: a session cut at chosen journal records resumes correctly."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
import trio

import orchestrator.session.live as session_module
from orchestrator import (
    RunResult,
    RunSettings,
    ScriptedModel,
    SessionStatusChanged,
    ToolResult,
    create_session,
    drive,
    load_state,
    open_session,
)
from orchestrator.models.scripted import parse_script
from orchestrator.session.live import JOURNAL, SNAPSHOT
from orchestrator.session.replay import read_snapshot
from orchestrator.store import JournalMark, scan_journal, write_atomic
from tests.scenes import run_settings, scripted_session
from tests.team.engines import Engine

SCRIPT: dict[str, Any] = {
    "agents": {
        "main": [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}
                ]
            },
            {"tool_calls": [{"name": "shell", "arguments": {"command": "echo x >> log.txt"}}]},
            {"text": "done"},
        ]
    }
}


def settings(model: ScriptedModel, engine: Engine) -> RunSettings:
    return run_settings(
        model,
        runner=engine.runner,
    )


async def run(root: Path, session_id: str, model: ScriptedModel, engine: Engine) -> RunResult:
    async with open_session(root, session_id, warn=lambda _: None) as live:
        return await drive(live, settings(model, engine))


@pytest.fixture
def finished(tmp_path: Path) -> tuple[Path, str, Path]:
    """A session of SCRIPT, made and not yet run; returns (root, id, directory)."""
    return scripted_session(tmp_path, SCRIPT)


@pytest.fixture
async def ran(finished: tuple[Path, str, Path], engine: Engine) -> tuple[Path, str, Path]:
    """`finished`, run once to completion on `engine`."""
    root, session_id, _ = finished
    await run(root, session_id, model(), engine)
    return finished


def cut_after(directory: Path, kind: str, occurrence: int = 1) -> None:
    """Keep the journal up to the `occurrence`-th record of `kind`, as a crash would leave
    it; drop the snapshot, which reflects later records."""
    lines = (directory / JOURNAL).read_bytes().splitlines(keepends=True)
    seen = 0
    for index, line in enumerate(lines):
        if orjson.loads(line)["k"] == kind:
            seen += 1
            if seen == occurrence:
                (directory / JOURNAL).write_bytes(b"".join(lines[: index + 1]))
                (directory / SNAPSHOT).unlink(missing_ok=True)
                # A crash there would have left the manifest as the run's start wrote it.
                manifest = directory / "session.json"
                fields = orjson.loads(manifest.read_bytes())
                manifest.write_bytes(orjson.dumps({**fields, "journal_seq": 0}))
                return
    raise AssertionError(f"no {kind} #{occurrence}")


def model() -> ScriptedModel:
    return ScriptedModel(parse_script(SCRIPT))


def results(directory: Path) -> list[tuple[str, str]]:
    state = load_state(directory, warn=lambda _: None)
    return [(m.name, m.status) for m in state.agents["main"].messages if isinstance(m, ToolResult)]


async def test_a_whole_run(finished: tuple[Path, str, Path], engine: Engine) -> None:
    root, session_id, directory = finished
    live_model = model()
    assert await run(root, session_id, live_model, engine) == RunResult("completed")
    # The context folded from the journal is exactly what the model was shown live.
    folded = load_state(directory, warn=lambda _: None).agents["main"].messages
    assert tuple(folded[:-1]) == live_model.requests[-1].messages
    assert results(directory) == [("write_file", "ok"), ("shell", "ok")]
    assert (directory / "workspace" / "log.txt").read_text() == "x\n"
    # The closing snapshot marks the whole journal, so a resume checks it by one CRC
    # and decodes it in one call.
    snapshot = orjson.loads((directory / SNAPSHOT).read_bytes())
    scan = scan_journal(directory / JOURNAL, mark=JournalMark(*snapshot["journal"]))
    assert tuple(scan.end) == tuple(snapshot["journal"])
    assert (scan.head.nbytes, scan.tail) == (scan.end_offset, [])
    # Resuming a finished session does nothing at all.
    again = model()
    assert await run(root, session_id, again, engine) == RunResult("completed", "already finished")
    assert again.requests == []


async def test_call_that_never_started_runs_on_resume(
    ran: tuple[Path, str, Path], engine: Engine
) -> None:
    root, session_id, directory = ran
    cut_after(directory, "assistant_replied", 2)  # the shell reply, before its start
    (directory / "workspace" / "log.txt").unlink()
    resumed = model()
    assert await run(root, session_id, resumed, engine) == RunResult("completed")
    assert results(directory) == [("write_file", "ok"), ("shell", "ok")]
    assert (directory / "workspace" / "log.txt").read_text() == "x\n"
    assert [r.step for r in resumed.requests] == [2]  # the model picks up at its next step


async def test_started_side_effect_is_interrupted_not_repeated(
    ran: tuple[Path, str, Path],
    engine: Engine,
) -> None:
    root, session_id, directory = ran
    cut_after(directory, "call_started", 1)  # shell started; its result never journaled
    assert await run(root, session_id, model(), engine) == RunResult("completed")
    assert results(directory) == [("write_file", "ok"), ("shell", "interrupted")]
    assert (directory / "workspace" / "log.txt").read_text() == "x\n"  # ran once, not twice


async def test_started_idempotent_call_runs_again(
    ran: tuple[Path, str, Path], engine: Engine
) -> None:
    root, session_id, directory = ran
    # write_file's start is not journaled at all (it is idempotent): cut after its reply.
    cut_after(directory, "assistant_replied", 1)
    (directory / "workspace" / "a.txt").unlink()
    assert await run(root, session_id, model(), engine) == RunResult("completed")
    assert results(directory) == [("write_file", "ok"), ("shell", "ok")]
    assert (directory / "workspace" / "a.txt").read_text() == "A"


async def test_final_reply_without_turn_end_closes_the_turn(
    ran: tuple[Path, str, Path],
    engine: Engine,
) -> None:
    root, session_id, directory = ran
    cut_after(directory, "assistant_replied", 3)  # "done" journaled, turn end not
    resumed = model()
    assert await run(root, session_id, resumed, engine) == RunResult("completed")
    assert resumed.requests == []  # the model is not asked again
    kinds = [f.parsed().kind for f in scan_journal(directory / JOURNAL).records]
    assert kinds[-3:] == ["turn_ended", "assessed", "session_status"]


async def test_model_failure_marks_the_session_failed_and_resumable(
    finished: tuple[Path, str, Path],
    engine: Engine,
) -> None:
    root, session_id, directory = finished
    short = ScriptedModel(parse_script({"agents": {"main": SCRIPT["agents"]["main"][:1]}}))
    result = await run(root, session_id, short, engine)
    assert result.status == "failed"
    assert "script ran out" in result.detail
    assert load_state(directory, warn=lambda _: None).status == "failed"
    assert await run(root, session_id, model(), engine) == RunResult("completed")
    assert results(directory) == [("write_file", "ok"), ("shell", "ok")]


async def test_a_vanished_workspace_is_a_clear_error(
    finished: tuple[Path, str, Path], engine: Engine
) -> None:
    from orchestrator.errors import ConfigError

    root, session_id, directory = finished
    (directory / "workspace").rmdir()
    with pytest.raises(ConfigError, match=r"workspace .* does not exist"):
        await run(root, session_id, model(), engine)
    assert load_state(directory, warn=lambda _: None).status == "failed"


async def test_a_provider_reusing_call_ids_still_gets_one_result_per_call(
    tmp_path: Path,
    engine: Engine,
) -> None:
    # Local servers number calls per reply ("call_0" every time); the journal keys calls by
    # ref, so an interrupted call is found even though an earlier call had the same id.
    replies = [
        {"tool_calls": [{"id": "call_0", "name": "shell", "arguments": {"command": "echo a"}}]},
        {
            "tool_calls": [
                {"id": "call_0", "name": "shell", "arguments": {"command": "echo b >> b.txt"}},
                {"id": "call_0", "name": "list_files", "arguments": {}},
            ]
        },
        {"text": "done"},
    ]
    script = {"agents": {"main": replies}}
    root, session_id, directory = scripted_session(tmp_path, script)
    assert await run(root, session_id, ScriptedModel(parse_script(script)), engine) == RunResult(
        "completed"
    )
    cut_after(directory, "call_started", 2)  # the second shell call started, no result
    assert await run(root, session_id, ScriptedModel(parse_script(script)), engine) == RunResult(
        "completed"
    )
    state = load_state(directory, warn=lambda _: None)
    answered = [
        (m.call_id, m.name, m.status)
        for m in state.agents["main"].messages
        if isinstance(m, ToolResult)
    ]
    # Within a reply the repeated id was made unique, so each result answers one call.
    assert answered == [
        ("call_0", "shell", "ok"),
        ("call_0", "shell", "interrupted"),
        ("call_0_1", "list_files", "ok"),
    ]
    assert (directory / "workspace" / "b.txt").read_text() == "b\n"  # not run twice


async def test_task_views_are_written_beside_the_journal(tmp_path: Path, engine: Engine) -> None:
    script = {
        "agents": {
            "main": [
                {
                    "tool_calls": [
                        {"name": "delegate", "arguments": {"description": "w", "prompt": "."}}
                    ]
                },
                {"tool_calls": [{"name": "wait_tasks", "arguments": {}}]},
                {"text": "done"},
            ],
            "t1": [
                {
                    "tool_calls": [
                        {"name": "report_progress", "arguments": {"summary": "half", "percent": 50}}
                    ]
                },
                {"tool_calls": [{"name": "complete", "arguments": {"summary": "all done"}}]},
            ],
        }
    }
    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="g", model="x:y", workspace=None)
    result = await run(root, session_id, ScriptedModel(parse_script(script)), engine)
    assert result.status == "completed"
    view = orjson.loads((directory / "tasks" / "t1.json").read_bytes())
    state = load_state(directory, warn=pytest.fail)
    assert view == msgspec.json.decode(msgspec.json.encode(state.tasks.get("t1")))
    assert (view["state"], view["progress"], view["completion"]["summary"]) == (
        "completed",
        "half",
        "all done",
    )
    assert oct((directory / "tasks" / "t1.json").stat().st_mode & 0o777) == "0o600"
    ran = [(f"{session_id}/t1", "SUCCESS")]
    assert engine.workflows() == (ran if engine.name == "dbos" else [])


class Exploding:
    async def emit(self, event: object, *, durable: bool = False) -> None:
        raise RuntimeError("the screen is on fire")


async def test_a_failing_event_sink_is_a_warning_not_a_failed_call(
    finished: tuple[Path, str, Path],
    engine: Engine,
) -> None:
    root, session_id, directory = finished
    warnings: list[str] = []
    async with open_session(root, session_id, warn=warnings.append) as live:
        model = ScriptedModel(parse_script(SCRIPT))
        run_settings = dataclasses.replace(settings(model, engine), ui=Exploding())
        result = await drive(live, run_settings)
    assert result.status == "completed"
    assert len(warnings) == 1
    assert "the screen is on fire" in warnings[0]
    main = load_state(directory, warn=pytest.fail).agents["main"]
    assert [m.status for m in main.messages if isinstance(m, ToolResult)] == ["ok", "ok"]
    assert (directory / "workspace" / "log.txt").read_text() == "x\n"  # ran once


async def test_the_library_gets_the_team_and_can_speak_to_the_main_agent(
    finished: tuple[Path, str, Path],
    engine: Engine,
) -> None:
    from orchestrator import ModelRequest, ScriptedReply, Team

    teams: list[Team] = []

    async def answer(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            await teams[0].say("say hello")
            return ScriptedReply(text="one moment")
        return ScriptedReply(text=f"answering: {request.messages[-1].content[-40:]}")  # type: ignore[union-attr]

    root, session_id, directory = finished
    async with open_session(root, session_id, warn=pytest.fail) as live:
        run_settings = dataclasses.replace(
            settings(ScriptedModel(answer), engine), on_team=teams.append
        )
        result = await drive(live, run_settings)
    assert result.status == "completed"
    main = load_state(directory, warn=pytest.fail).agents["main"]
    assert "say hello" in main.messages[-1].text  # type: ignore[union-attr]


async def test_a_due_snapshot_is_written_beside_the_agents_not_by_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record that makes a snapshot due returns at once; the session's keeper writes
    it, and records go on being journaled while the write is held up."""
    monkeypatch.setattr(session_module, "SNAPSHOT_EVERY", 2)
    writing, release = trio.Event(), threading.Event()

    def held_write(path: Path, data: bytes, **kwargs: Any) -> None:
        if path.name == SNAPSHOT:
            trio.from_thread.run_sync(writing.set)
            release.wait(timeout=10)  # (the old way, the emitter: it fails)
        write_atomic(path, data, **kwargs)

    monkeypatch.setattr(session_module, "write_atomic", held_write)
    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="g", model="x:y", workspace=None)
    async with open_session(root, session_id, warn=pytest.fail) as live:
        await live.emit(SessionStatusChanged(agent="main", status="running"))
        await live.emit(SessionStatusChanged(agent="main", status="running", detail="due"))
        assert not (directory / SNAPSHOT).exists()  # the emitter did not write it
        await writing.wait()
        for _ in range(5):  # journaled and folded while the snapshot's write is held
            await live.emit(SessionStatusChanged(agent="main", status="running"))
        assert live.state.seq == 7
        release.set()
    assert read_snapshot(directory, warn=pytest.fail).seq == 7  # (the last, at close)
    assert load_state(directory, warn=pytest.fail).seq == 7


EDIT_SCRIPT: dict[str, Any] = {
    "agents": {
        "main": [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "a.txt", "content": "one\n"}}
                ]
            },
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "arguments": {"path": "a.txt", "old_text": "one", "new_text": "two"},
                    }
                ]
            },
            {"text": "done"},
        ]
    }
}


@pytest.mark.parametrize(
    ("left", "status", "says", "after"),
    [
        ("one\n", "ok", "edited a.txt", "two\n"),  # cut before it wrote: it runs now
        ("two\n", "ok", "edited a.txt (before the session stopped)", "two\n"),  # it wrote
        ("three\n", "error", "old_text not found in a.txt", "three\n"),  # what a run says now
        ("one two\n", "interrupted", "may or may not have taken effect", "one two\n"),  # unknown
    ],
)
async def test_a_cut_off_edit_is_settled_by_what_the_file_holds(
    tmp_path: Path, left: str, status: str, says: str, after: str, engine: Engine
) -> None:
    root, session_id, directory = scripted_session(tmp_path, EDIT_SCRIPT)
    edit_model = ScriptedModel(parse_script(EDIT_SCRIPT))
    assert await run(root, session_id, edit_model, engine) == RunResult("completed")
    cut_after(directory, "call_started", 1)  # the edit started; its result never journaled
    (directory / "workspace" / "a.txt").write_text(left)
    assert await run(
        root, session_id, ScriptedModel(parse_script(EDIT_SCRIPT)), engine
    ) == RunResult("completed")
    state = load_state(directory, warn=lambda _: None)
    [edit] = [m for m in state.agents["main"].messages if isinstance(m, ToolResult)][1:]
    assert (edit.name, edit.status) == ("edit_file", status)
    assert says in edit.content
    assert (directory / "workspace" / "a.txt").read_text() == after
