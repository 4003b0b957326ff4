"""`run_sync` and `resume_sync` (issue 39, item 2): a script without a loop runs a
session and resumes it; inside a running loop each says what to do instead."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import trio

import orchestrator as orc


def hello() -> orc.ScriptedModel:
    return orc.ScriptedModel(lambda _: orc.ScriptedReply(text="Hello."))


def test_a_script_runs_a_session_then_resumes_it(tmp_path: Path) -> None:
    result = orc.run_sync("say hello", model=hello(), workspace=tmp_path, sessions_dir=tmp_path)
    assert (result.status, result.output) == ("completed", "Hello.")
    assert result.session_dir is not None
    again = orc.resume_sync(result.session_dir, model=hello(), message="once more")
    assert (again.status, again.session_dir) == ("completed", result.session_dir)


def test_the_keywords_are_checked_as_run_checks_them() -> None:
    with pytest.raises(TypeError, match=r"run_sync\(\) got an unexpected keyword"):
        orc.run_sync("go", model=hello(), modle="x")  # type: ignore[call-arg]


def test_inside_asyncio_it_says_to_await_run(tmp_path: Path) -> None:
    async def main() -> None:
        orc.run_sync("go", model=hello(), workspace=tmp_path)

    with pytest.raises(
        RuntimeError, match=r"inside a running asyncio loop .* await orchestrator\.run"
    ):
        asyncio.run(main())
    assert not list(tmp_path.iterdir())  # refused before any session was made


async def test_inside_trio_it_says_to_await_resume(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"resume_sync\(\) was called inside a running trio"):
        orc.resume_sync(tmp_path)
    await trio.lowlevel.checkpoint()


def test_runs_without_sessions_dir_share_one_temporary_root(tmp_path: Path) -> None:
    first = orc.run_sync("one", model=hello(), workspace=tmp_path)
    second = orc.run_sync("two", model=hello(), workspace=tmp_path)
    assert first.session_dir is not None
    assert second.session_dir is not None
    assert first.session_dir != second.session_dir
    assert first.session_dir.parent == second.session_dir.parent  # one root per process
    assert first.session_dir.parent.name.startswith("orchestrator-sessions-")
