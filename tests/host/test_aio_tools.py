"""Coroutine tools under an asyncio host (issue 39, item 3): they run on the program's
own loop, so asyncio clients work in them; a sync tool still runs in a worker thread; a
tool that raises is an error the model reads; a trio cancellation (the program cancels
its run) cancels the tool's asyncio task; an asyncio cancellation of the tool is an
interrupted call. Under trio nothing changes (tests/tools/test_function_tools.py)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import orchestrator as orc
from orchestrator import ModelRequest, ScriptedModel, ScriptedReply
from tests.host.test_run import results
from tests.scenes import c


def calling(tool: str, **arguments: object) -> ScriptedModel:
    """Calls `tool` once, then answers with what became of the call."""

    def respond(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return ScriptedReply(tool_calls=(c(tool, **arguments),))
        told = "; ".join(f"{m.name}: {m.status}: {m.content}" for m in results(request))
        return ScriptedReply(text=told)

    return ScriptedModel(respond)


def test_a_coroutine_tool_runs_on_the_programs_loop(workspace: Path) -> None:
    seen: dict[str, object] = {}
    progress: list[str] = []

    @orc.tool(read_only=True)
    async def lookup(word: str, ctx: orc.ToolContext) -> str:
        """Look a word up."""
        seen["loop"] = asyncio.get_running_loop()
        seen["thread"] = threading.get_ident()
        await asyncio.sleep(0.01)  # an asyncio client's await
        await ctx.report_progress(f"looking up {word}")
        return f"{word}: a greeting"

    def on_event(event: orc.Event) -> None:
        if isinstance(event, orc.ToolProgress):
            progress.append(event.message)

    async def main() -> tuple[orc.RunResult, asyncio.AbstractEventLoop]:
        result = await orc.run(
            "look", model=calling("lookup", word="hello"), workspace=workspace,
            tools=[lookup], on_event=on_event,
        )  # fmt: skip
        return result, asyncio.get_running_loop()

    result, loop = asyncio.run(main())
    assert (result.status, result.output) == ("completed", "lookup: ok: hello: a greeting")
    assert seen == {"loop": loop, "thread": threading.get_ident()}
    assert progress == ["looking up hello"]


def test_a_sync_tool_still_runs_in_a_worker_thread(workspace: Path) -> None:
    threads: list[int] = []

    @orc.tool(read_only=True)
    def count(text: str) -> int:
        """Count the words."""
        threads.append(threading.get_ident())
        return len(text.split())

    async def main() -> orc.RunResult:
        return await orc.run(
            "count", model=calling("count", text="a b c"), workspace=workspace, tools=[count]
        )

    result = asyncio.run(main())
    assert result.output == "count: ok: 3"
    assert threads
    assert threads[0] != threading.get_ident()


def test_a_coroutine_tool_that_raises_is_an_error_the_model_reads(workspace: Path) -> None:
    @orc.tool(read_only=True)
    async def lookup(word: str) -> str:
        """Look a word up."""
        await asyncio.sleep(0)
        raise LookupError(f"no {word} here")

    async def main() -> orc.RunResult:
        return await orc.run(
            "look", model=calling("lookup", word="x"), workspace=workspace, tools=[lookup]
        )

    result = asyncio.run(main())
    assert result.status == "completed"
    assert result.output == "lookup: error: lookup crashed: LookupError: no x here"


def test_cancelling_the_run_cancels_the_tools_asyncio_task(workspace: Path, tmp_path: Path) -> None:
    started, stopped = asyncio.Event(), []

    @orc.tool(read_only=True)
    async def wait_forever() -> str:
        """Wait."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.append("cancelled")
            raise
        return "never"

    async def main() -> None:
        run = asyncio.create_task(
            orc.run(
                "wait",
                model=calling("wait_forever"),
                workspace=workspace,
                tools=[wait_forever],
                sessions_dir=tmp_path / "s",
            )
        )
        await started.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())
    assert stopped == ["cancelled"]
    [session] = (tmp_path / "s").iterdir()
    assert orc.load_state(session).status == "interrupted"


def test_a_tool_cancelled_on_the_programs_loop_is_an_interrupted_call(workspace: Path) -> None:
    @orc.tool(read_only=True)
    async def fragile() -> str:
        """Something the program's loop may cancel."""
        task = asyncio.current_task()
        assert task is not None
        task.cancel()  # as the program's own shutdown or timeout would
        await asyncio.sleep(1)
        return "never"

    async def main() -> orc.RunResult:
        return await orc.run("go", model=calling("fragile"), workspace=workspace, tools=[fragile])

    result = asyncio.run(main())
    assert result.status == "completed"
    assert result.output.startswith("fragile: interrupted: interrupted: fragile was cancelled")
