"""`run` and `resume` awaited from asyncio (host/aio.py): plain test functions, not trio
tests, each starting its own loop with `asyncio.run` or `anyio.run(backend="asyncio")`.
The session runs under trio in a thread of its own; the caller's callbacks run on the
caller's thread; cancelling the caller's task interrupts the session; errors arrive as
themselves; two runs at once both finish."""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path

import anyio
import pytest

import orchestrator as orc
from orchestrator import ModelRequest, ScriptedModel, ScriptedReply
from orchestrator.errors import ConfigError
from tests.host.test_host_loop import respond as choose_a_license
from tests.host.test_run import results, writer
from tests.scenes import c

WS = orc.workspace_tools()  # the tools the scripted agents call


def one_write(request: ModelRequest) -> ScriptedReply:
    """Writes a file, then answers with what became of the call."""
    if request.step == 0:
        return ScriptedReply(tool_calls=(c("write_file", path="out.txt", content="x"),))
    told = "; ".join(f"{m.name}: {m.status}: {m.content}" for m in results(request))
    return ScriptedReply(text=f"done. {told}")


def hello() -> ScriptedModel:
    return ScriptedModel(lambda r: ScriptedReply(text="Hello."))


def test_a_run_completes_and_its_events_arrive_on_the_callers_thread(workspace: Path) -> None:
    threads: set[int] = set()
    kinds: list[str] = []

    async def on_event(event: orc.Event) -> None:
        threads.add(threading.get_ident())
        kinds.append(event.kind)

    async def main() -> orc.RunResult:
        result = await orc.run("say hello", model=hello(), workspace=workspace, on_event=on_event)
        threads.add(threading.get_ident())
        return result

    result = asyncio.run(main())
    assert (result.status, result.output) == ("completed", "Hello.")
    assert threads == {threading.get_ident()}  # asyncio.run's loop runs on this thread
    assert (kinds[0], kinds[-1]) == ("settings", "session_status")
    assert "assistant_replied" in kinds


def test_under_anyio_an_event_sink_and_a_plain_approver_run_on_the_callers_thread(
    workspace: Path,
) -> None:
    caller = threading.get_ident()
    asked: list[tuple[str, int]] = []

    def approve(request: orc.ApprovalRequest) -> bool:
        asked.append((request.tool, threading.get_ident()))
        return True

    sink = orc.ListSink()

    async def main() -> orc.RunResult:
        return await orc.run(
            "write", model=ScriptedModel(one_write), tools=WS,
            workspace=workspace, on_event=sink, approve=approve,
        )  # fmt: skip

    result = anyio.run(main, backend="asyncio")
    assert result.status == "completed"
    assert "write_file: ok" in result.output
    assert asked == [("write_file", caller)]
    assert [e.kind for e in sink.events][-1] == "session_status"
    assert (workspace / "out.txt").read_text() == "x"


def test_an_async_approvers_denial_reaches_the_model(workspace: Path) -> None:
    caller = threading.get_ident()
    asked: list[tuple[str, int]] = []

    async def approve(request: orc.ApprovalRequest) -> bool | orc.Denied:
        asyncio.get_running_loop()  # raises on any thread without a running asyncio loop
        asked.append((request.tool, threading.get_ident()))
        return request.tool == "write_file" or orc.Denied("no commands on Fridays")

    async def main() -> orc.RunResult:
        return await orc.run(
            "write", model=ScriptedModel(writer), workspace=workspace, approve=approve, tools=WS
        )

    result = asyncio.run(main())
    assert sorted(asked) == [("shell", caller), ("write_file", caller)]
    assert "write_file: ok" in result.output
    assert "shell was not approved: no commands on Fridays; do not retry it" in result.output
    assert not (workspace / "hi.txt").exists()


def test_an_async_answerer_answers_a_subagents_question(tmp_path: Path) -> None:
    caller = threading.get_ident()
    asked: list[tuple[str, int]] = []

    async def answer(question: orc.Question) -> str:
        asyncio.get_running_loop()
        asked.append((question.text, threading.get_ident()))
        return "MIT"

    async def main() -> orc.RunResult:
        return await orc.run(
            "choose", model=ScriptedModel(choose_a_license), tools=WS,
            agents=orc.builtin_agents(), workspace=tmp_path, answer=answer,
        )  # fmt: skip

    result = asyncio.run(main())
    assert asked == [("MIT or Apache?", caller)]
    assert result.output == "The worker chose: MIT"


def test_cancelling_the_task_interrupts_the_session_and_a_resume_completes_it(
    workspace: Path, tmp_path: Path
) -> None:
    root = tmp_path / "s"

    async def main() -> orc.RunResult:
        asked = asyncio.Event()

        async def walk_away(request: orc.ApprovalRequest) -> bool:
            asked.set()
            await asyncio.Event().wait()  # never answers
            raise AssertionError("unreachable")

        run = asyncio.create_task(
            orc.run(
                "write",
                model=ScriptedModel(one_write),
                tools=WS,
                workspace=workspace,
                sessions_dir=root,
                approve=walk_away,
            )
        )
        await asked.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        [directory] = root.iterdir()
        # The trio run has ended (and let go of the session) before the task did.
        assert orc.load_state(directory, warn=print).status == "interrupted"
        return await orc.resume(
            directory, model=ScriptedModel(one_write), tools=WS, approve=lambda r: True
        )

    result = asyncio.run(main())
    assert result.status == "completed"
    assert "write_file: cancelled" in result.output
    assert not (workspace / "out.txt").exists()  # the cancelled call never ran


def test_an_error_on_the_trio_side_arrives_as_itself(workspace: Path, tmp_path: Path) -> None:
    async def main() -> None:
        result = await orc.run("go", model=hello(), workspace=workspace, sessions_dir=tmp_path)
        assert result.session_dir is not None
        shutil.rmtree(workspace)
        await orc.resume(result.session_dir, model=hello(), message="again")

    with pytest.raises(ConfigError, match=r"workspace .* does not exist") as caught:
        asyncio.run(main())
    assert type(caught.value) is ConfigError


def test_on_team_is_refused_before_a_session_is_made(workspace: Path, tmp_path: Path) -> None:
    async def main() -> None:
        await orc.run(
            "go",
            model=hello(),
            workspace=workspace,
            sessions_dir=tmp_path / "s",
            on_team=lambda team: None,
        )

    with pytest.raises(ConfigError, match="on_team is for trio programs"):
        asyncio.run(main())
    assert not (tmp_path / "s").exists()


def test_two_runs_at_once_both_complete(tmp_path: Path) -> None:
    """Each run's approver waits until the other's has been asked: they finish only if
    they run at the same time."""
    places = [tmp_path / "a", tmp_path / "b"]
    for place in places:
        place.mkdir()

    async def main() -> list[orc.RunResult]:
        asked = [asyncio.Event(), asyncio.Event()]

        def approver(me: int) -> orc.HostApprover:
            async def approve(request: orc.ApprovalRequest) -> bool:
                asked[me].set()
                await asked[1 - me].wait()
                return True

            return approve

        return list(
            await asyncio.gather(
                *(
                    orc.run(
                        "write",
                        model=ScriptedModel(one_write),
                        tools=WS,
                        workspace=place,
                        sessions_dir=tmp_path / "s",
                        approve=approver(me),
                    )
                    for me, place in enumerate(places)
                )
            )
        )

    first, second = asyncio.run(main())
    assert (first.status, second.status) == ("completed", "completed")
    assert first.session_id != second.session_id
    assert [(p / "out.txt").read_text() for p in places] == ["x", "x"]
