"""`stream` and `stream_resume`: a run's events pulled with `async for`, then its result;
the run waits for a slow reader; leaving the block early interrupts the session, which
resumes; the run's error and the block's own arrive as themselves. Under trio (the async
tests) and under asyncio (the plain ones, with `asyncio.run`)."""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path

import pytest
import trio
import trio.testing

import orchestrator as orc
from orchestrator import ModelRequest, ScriptedModel, ScriptedReply
from orchestrator.errors import ConfigError
from orchestrator.host.stream import _pulled


def hello() -> ScriptedModel:
    return ScriptedModel(lambda r: ScriptedReply(text="Hello."))


async def read_all(events: orc.EventStream) -> list[orc.Event]:
    return [event async for event in events]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    where = tmp_path / "work"
    where.mkdir()
    return where


async def test_the_events_then_the_result(workspace: Path, tmp_path: Path) -> None:
    async with orc.stream(
        "say hello", model=hello(), workspace=workspace, sessions_dir=tmp_path / "s"
    ) as events:
        with pytest.raises(RuntimeError, match="read its events to their end first"):
            _ = events.result
        kinds = [event.kind async for event in events]
    assert (kinds[0], kinds[-1]) == ("settings", "session_status")
    assert "assistant_replied" in kinds
    assert (events.result.status, events.result.output) == ("completed", "Hello.")
    assert events.result.session_dir == events.session_dir
    assert events.session_dir.parent == tmp_path / "s"
    assert [e async for e in events] == []  # read to its end, it stays there


async def test_the_run_waits_for_its_reader(workspace: Path) -> None:
    calls: list[int] = []

    def respond(request: ModelRequest) -> ScriptedReply:
        calls.append(request.step)
        return ScriptedReply(text="Hello.")

    async with orc.stream(
        "say hello", model=ScriptedModel(respond), workspace=workspace, buffer=1
    ) as events:
        first = await events.__anext__()
        await trio.testing.wait_all_tasks_blocked()
        # One event read, one waiting in the buffer, the run blocked on the third:
        # still before its model call.
        assert (first.kind, calls) == ("settings", [])
        rest = [event.kind async for event in events]
    assert calls == [0]
    assert rest[-1] == "session_status"


async def test_leaving_early_interrupts_the_session_and_it_resumes(workspace: Path) -> None:
    async with orc.stream("say hello", model=hello(), workspace=workspace, buffer=1) as events:
        async for _ in events:
            break  # with one event read, the run cannot have ended
    with pytest.raises(RuntimeError, match=r"resume\(events.session_dir\)"):
        _ = events.result
    assert orc.load_state(events.session_dir, warn=print).status == "interrupted"
    async with orc.stream_resume(events.session_dir, model=hello()) as again:
        kinds = [event.kind async for event in again]
    assert (again.result.status, again.result.output) == ("completed", "Hello.")
    assert again.session_dir == events.session_dir
    assert kinds[-1] == "session_status"


async def test_the_runs_error_comes_after_its_events(workspace: Path, tmp_path: Path) -> None:
    result = await orc.run("go", model=hello(), workspace=workspace, sessions_dir=tmp_path)
    assert result.session_dir is not None
    shutil.rmtree(workspace)
    with pytest.raises(ConfigError, match="does not exist") as caught:
        async with orc.stream_resume(result.session_dir, model=hello(), message="more") as events:
            await read_all(events)
    assert type(caught.value) is ConfigError
    with pytest.raises(RuntimeError):
        _ = events.result


async def test_an_error_the_reader_did_not_reach_is_raised_as_the_block_ends(
    tmp_path: Path,
) -> None:
    """With a run of the test's own (a real one's end cannot be awaited without reading
    to it): it sends an event and fails, and the reader reads nothing."""
    said = orc.Notice(agent="main", message="hello")

    async def failing(on_event: orc.EventHandler) -> orc.RunResult:
        sent = on_event(said)
        assert sent is not None  # the stream's handler is async
        await sent
        raise ConfigError("it failed")

    with pytest.raises(ConfigError, match="it failed"):
        async with _pulled(failing, tmp_path, 16) as events:
            await trio.testing.wait_all_tasks_blocked()  # the run has ended
    assert [event async for event in events] == []  # the block has closed the stream


async def test_the_blocks_own_error_is_not_wrapped(workspace: Path) -> None:
    async def fail(events: orc.EventStream) -> None:
        await events.__anext__()
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine") as caught:
        async with orc.stream("go", model=hello(), workspace=workspace, buffer=1) as events:
            await fail(events)
    assert caught.value.__context__ is None  # not the nursery's group
    assert orc.load_state(events.session_dir, warn=print).status == "interrupted"


async def test_a_buffer_holds_at_least_one_event(workspace: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        async with orc.stream_resume(tmp_path, model=hello(), buffer=0):
            pass


def test_from_asyncio_the_events_come_on_the_readers_thread(workspace: Path) -> None:
    async def main() -> tuple[list[str], set[int], orc.EventStream]:
        kinds: list[str] = []
        threads: set[int] = set()
        async with orc.stream("say hello", model=hello(), workspace=workspace) as events:
            async for event in events:
                kinds.append(event.kind)
                threads.add(threading.get_ident())
        return kinds, threads, events

    kinds, threads, events = asyncio.run(main())
    assert threads == {threading.get_ident()}
    assert (kinds[0], kinds[-1]) == ("settings", "session_status")
    assert (events.result.status, events.result.output) == ("completed", "Hello.")


def test_from_asyncio_leaving_early_interrupts_and_the_session_resumes(workspace: Path) -> None:
    async def main() -> tuple[Path, orc.RunResult]:
        async with orc.stream("say hello", model=hello(), workspace=workspace, buffer=1) as events:
            async for _ in events:
                break
        with pytest.raises(RuntimeError, match="no result"):
            _ = events.result
        assert orc.load_state(events.session_dir, warn=print).status == "interrupted"
        async with orc.stream_resume(events.session_dir, model=hello()) as again:
            async for _ in again:
                pass
        return events.session_dir, again.result

    directory, second = asyncio.run(main())
    assert (second.status, second.output, second.session_dir) == ("completed", "Hello.", directory)


def test_from_asyncio_the_runs_error_arrives_as_itself(workspace: Path, tmp_path: Path) -> None:
    async def main() -> None:
        result = await orc.run("go", model=hello(), workspace=workspace, sessions_dir=tmp_path)
        assert result.session_dir is not None
        shutil.rmtree(workspace)
        async with orc.stream_resume(result.session_dir, model=hello(), message="more") as events:
            async for _ in events:
                pass

    with pytest.raises(ConfigError, match="does not exist") as caught:
        asyncio.run(main())
    assert type(caught.value) is ConfigError
