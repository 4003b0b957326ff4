"""`run(..., in_memory=True)` and `stream(..., in_memory=True)`: the session is a
`MemorySession`: the answer is right, the tools run, the events reach `on_event`, and
nothing is written (no session under the process's temporary root or `sessions_dir`,
nothing in the workspace); there is nothing to resume."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest

import orchestrator as orc
from orchestrator import ModelRequest, ScriptedModel, ScriptedReply
from orchestrator.errors import ConfigError, SessionNotFound
from tests.host.test_run import results
from tests.scenes import c

looked_up: list[str] = []


@orc.tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: the key.
    """
    looked_up.append(key)
    return "42" if key == "k" else "nothing"


def asks_then_answers(request: ModelRequest) -> ScriptedReply:
    if request.step == 0:
        return ScriptedReply(tool_calls=(c("lookup", key="k"),))
    return ScriptedReply(text=f"k holds {results(request)[-1].content}")


ASKED = "what does k hold?"


def asking(workspace: Path, **more: Any) -> dict[str, Any]:
    """The run these tests make, `more` added: a model that looks k up, then answers."""
    return {
        "model": ScriptedModel(asks_then_answers),
        "tools": [lookup],
        "workspace": workspace,
        **more,
    }


@pytest.fixture
def temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where `tempfile` makes its directories for this test: the process's sessions root
    for runs without `sessions_dir`, once made, is elsewhere; a new one would be here."""
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def files_under(*roots: Path) -> list[Path]:
    return sorted(p for root in roots for p in root.rglob("*"))


async def test_an_in_memory_run_answers_runs_its_tools_shows_its_events_and_writes_nothing(
    workspace: Path, temporary: Path
) -> None:
    looked_up.clear()
    before = files_under(workspace, temporary)
    events: list[orc.Event] = []
    result = await orc.run(ASKED, **asking(workspace, on_event=events.append, in_memory=True))
    assert (result.status, result.output) == ("completed", "k holds 42")
    assert looked_up == ["k"]
    assert result.session_dir is None
    assert result.session_id  # named as a session on disk is, for the events and logs
    assert result.usage.input_tokens > 0
    kinds = [event.kind for event in events]
    assert (kinds[0], kinds[-1]) == ("settings", "session_status")
    assert {"tool_call_started", "tool_call_finished", "assistant_replied"} <= set(kinds)
    finished = [e for e in events if isinstance(e, orc.ToolCallFinished)]
    assert [(e.result.name, e.result.content) for e in finished] == [("lookup", "42")]
    assert files_under(workspace, temporary) == before


async def test_the_same_run_on_disk_is_written_where_the_in_memory_one_is_not(
    workspace: Path, temporary: Path
) -> None:
    """The check above can fail: without `in_memory`, the same run leaves a session."""
    result = await orc.run(ASKED, **asking(workspace, sessions_dir=temporary / "sessions"))
    assert result.output == "k holds 42"
    assert result.session_dir is not None
    assert result.session_dir in files_under(temporary)


async def test_a_resume_of_an_in_memory_run_says_there_is_nothing_to_resume(
    workspace: Path,
) -> None:
    result = await orc.run(
        "hi", model=ScriptedModel(lambda r: ScriptedReply(text="Hi.")), in_memory=True,
        workspace=workspace,
    )  # fmt: skip
    with pytest.raises(SessionNotFound, match="in_memory=True keeps none"):
        await orc.resume(result.session_dir)  # type: ignore[arg-type]


async def test_in_memory_with_a_sessions_dir_is_refused(workspace: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="give no sessions_dir"):
        await orc.run(
            "hi",
            model=ScriptedModel(lambda r: ScriptedReply(text="Hi.")),
            workspace=workspace,
            sessions_dir=tmp_path / "s",
            in_memory=True,
        )
    assert not (tmp_path / "s").exists()


async def test_an_in_memory_stream_gives_the_events_and_the_result(
    workspace: Path, temporary: Path
) -> None:
    before = files_under(workspace, temporary)
    async with orc.stream(ASKED, **asking(workspace, in_memory=True)) as events:
        kinds = [event.kind async for event in events]
    assert events.session_dir is None
    assert events.result.output == "k holds 42"
    assert "tool_call_finished" in kinds
    assert files_under(workspace, temporary) == before


def test_an_in_memory_run_from_asyncio(workspace: Path) -> None:
    async def main() -> orc.RunResult:
        return await orc.run(ASKED, **asking(workspace, in_memory=True))

    result = asyncio.run(main())
    assert (result.status, result.output, result.session_dir) == ("completed", "k holds 42", None)
