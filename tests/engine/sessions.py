"""A session on the dbos engine for the tests of tasks on workers (`Setup`), and the
scripts they run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import trio

from orchestrator import (
    Event,
    EventSink,
    InProcessRunner,
    ListSink,
    Notice,
    RunResult,
    RunSettings,
    ScriptedModel,
    create_session,
    drive,
    event_json,
    open_session,
)
from orchestrator.engine import dbos_workers, sqlite_url
from orchestrator.engine.store import Store
from orchestrator.models.scripted import parse_script
from orchestrator.team.runtime import TeamHook
from orchestrator.tools import PermissionPolicy, approve_all, workspace_tools
from tests.engine.workers import WorkerProcess, start_worker
from tests.scenes import call


def main_script(*delegations: dict[str, Any], waits: int = 3) -> list[dict[str, Any]]:
    """The main agent's script: it delegates (in one reply), waits for its tasks `waits`
    times, then says it is done (as often as it is woken)."""
    return [
        {"tool_calls": list(delegations)},
        *[{"tool_calls": [call("wait_tasks")]} for _ in range(waits)],
        *[{"text": f"done ({n})"} for n in range(4)],
    ]


def delegates_once(
    prompt: str, task: list[dict[str, Any]], then: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A script: the main agent delegates one task ("w", `prompt`), waits for it once,
    makes the replies `then` and says it is done; the task (t1) plays `task`."""
    delegate = {"tool_calls": [call("delegate", description="w", prompt=prompt)]}
    waits = {"tool_calls": [call("wait_tasks")]}
    return {"agents": {"main": [delegate, waits, *(then or []), {"text": "done"}], "t1": task}}


def main_writes_a_and_b(a: list[str], b: list[str]) -> list[dict[str, Any]]:
    """The main agent's script that delegates "write a" (t1, writing `a`) and "write b"
    (t2, writing `b`) at once."""
    return main_script(
        call("delegate", description="a", prompt="write a", write_scope=a),
        call("delegate", description="b", prompt="write b", write_scope=b),
    )


TWO_TASKS: dict[str, Any] = {
    "agents": {
        "main": main_writes_a_and_b(["a.txt"], ["b.txt"]),
        "t1": [
            {"tool_calls": [call("write_file", path="a.txt", content="A")]},
            {"tool_calls": [call("complete", summary="wrote a")]},
        ],
        "t2": [
            {"tool_calls": [call("write_file", path="b.txt", content="B")]},
            {"tool_calls": [call("complete", summary="wrote b")]},
        ],
    }
}


class Notices:
    """The people's notices of a run, as text."""

    def __init__(self, into: list[str]) -> None:
        self.into = into

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        if isinstance(event, Notice):
            self.into.append(event.message)


class Setup:
    def __init__(self, tmp: Path, script: dict[str, Any]) -> None:
        self.tmp = tmp
        self.script = script
        self.root, self.workspace = tmp / "sessions", tmp / "ws"
        self.workspace.mkdir()
        self.script_file = tmp / "script.json"
        self.script_file.write_bytes(orjson.dumps(script))
        self.session_id, self.directory = create_session(
            self.root, goal="g", model=f"scripted:{self.script_file}", workspace=self.workspace
        )
        self.url = sqlite_url(tmp / "engine.sqlite")
        self.task_workspace = self.workspace  # where the session says its tasks work

    async def run(
        self,
        on_team: TeamHook | None = None,
        ui: list[str] | None = None,
        *,
        sink: EventSink | None = None,
        local: bool = False,
    ) -> RunResult:
        """The session run to its end; its notices into `ui`, or its events to `sink`;
        its tasks on workers, or in this process (`local`)."""
        return await self.drive(
            self.settings(
                on_team=on_team,
                ui=sink if sink is not None else ListSink() if ui is None else Notices(ui),
                approve=approve_all,
                **({"runner": InProcessRunner} if local else {}),
            )
        )

    def settings(self, **more: Any) -> RunSettings:
        """The settings of a run of this session: the scripted model, the workspace
        tools, the default permission rules (a write asks), its tasks on workers; `more`
        adds to them or replaces them."""
        spec = f"scripted:{self.script_file}"
        wiring: dict[str, Any] = {
            "model": ScriptedModel(parse_script(self.script)),
            "tools": workspace_tools(),
            "policy": PermissionPolicy(),
            "runner": dbos_workers(self.url, model=spec, workspace=self.task_workspace),
        }
        return RunSettings(**{**wiring, **more})

    async def drive(self, settings: RunSettings) -> RunResult:
        """The session run to its end with `settings`."""
        async with open_session(self.root, self.session_id, warn=lambda _: None) as live:
            return await drive(live, settings)

    async def on_a_worker(
        self, run: Callable[[], Awaitable[RunResult]] | None = None, **worker: Any
    ) -> tuple[RunResult, WorkerProcess]:
        """The session run (by `run`, else `self.run()`) while one worker, started with
        `worker`'s options, takes its tasks; the worker stopped after. Checked: the
        session completed."""
        async with trio.open_nursery() as nursery:
            started = await start_worker(nursery, self.url, self.tmp, **worker)
            with trio.fail_after(120):
                result = await (run or self.run)()
            await started.stop()
        assert result.status == "completed", (result, started.lines)
        return result, started

    async def taken_over(
        self,
        stop: Callable[[WorkerProcess], Awaitable[None]],
        *,
        first: str = "first",
        before: str = "",
        run: Callable[[], Awaitable[RunResult]] | None = None,
        then: Callable[[], None] = lambda: None,
        **worker: Any,
    ) -> tuple[RunResult, WorkerProcess, WorkerProcess]:
        """The session run (by `run`, else `self.run()`) while a worker named `first`
        (running `before`) takes its tasks until `stop(it)` has it end; then a second
        worker ("second") sees it silent and takes its tasks over, and `then()` is
        called. Both started with `worker`'s options; the second stopped after. Checked:
        the session completed. (The result, the first worker, the second.)"""
        outcome: list[RunResult] = []
        ended = trio.Event()

        async def session() -> None:
            outcome.append(await (run or self.run)())
            ended.set()

        async with trio.open_nursery() as nursery:
            dying = await start_worker(nursery, self.url, self.tmp, first, before=before, **worker)
            nursery.start_soon(session)
            with trio.fail_after(120):
                await stop(dying)
                await dying.process.wait()
                second = await start_worker(nursery, self.url, self.tmp, "second", **worker)
                await second.see("is silent: its tasks are queued again")
                then()
                await ended.wait()
            await second.stop()
        (result,) = outcome
        assert result.status == "completed", (result, second.lines)
        return result, dying, second

    def task_lines(self, task: str = "t1") -> list[bytes]:
        """The lines of `task`'s journal, in the engine's database."""
        store = Store(self.url)
        try:
            return [line for _, line in store.records(f"{self.session_id}/{task}")]
        finally:
            store.close()

    def task_records(self, task: str = "t1") -> bytes:
        """The lines of `task`'s journal, one after another."""
        return b"".join(self.task_lines(task))

    def journal_lines(self, *needles: str) -> list[str]:
        text = (self.directory / "journal.jsonl").read_text()
        return [line for line in text.splitlines() if all(n in line for n in needles)]


ONE_TASK: dict[str, Any] = {
    "agents": {
        "main": main_script(
            call("delegate", description="a", prompt="write a", write_scope=["a.txt"])
        ),
        "t1": [
            {"text": "writing a", "tool_calls": [call("write_file", path="a.txt", content="A")]},
            {"tool_calls": [call("complete", summary="wrote a")]},
        ],
    }
}


ANSWERED: dict[str, Any] = {
    "agents": {
        "main": [
            {"tool_calls": [call("delegate", description="ask", prompt="ask first")]},
            {"tool_calls": [call("wait_tasks")]},
            {
                "tool_calls": [
                    call("send_message", task="t1", kind="answer", in_reply_to="t1.m1", text="x")
                ]
            },
            *[{"tool_calls": [call("wait_tasks")]} for _ in range(2)],
            *[{"text": f"done ({n})"} for n in range(4)],
        ],
        "t1": [
            {"tool_calls": [call("ask_decision", question="x or y?", options=["x", "y"])]},
            {"tool_calls": [call("write_file", path="choice.txt", content="x")]},
            {"tool_calls": [call("complete", summary="chose x")]},
        ],
    }
}


SHOWN_KINDS = frozenset(
    {"turn_started", "assistant_replied", "tool_call_started", "tool_call_finished", "turn_ended"}
)


def shown(events: list[Event], agent: str) -> list[tuple[str, str]]:
    """What the live view and the transcript show of `agent`'s work: its turns, its
    replies (their text) and its calls (their tool, their outcome)."""
    told = []
    for event in events:
        fields = event_json(event)
        if event.agent != agent or fields["kind"] not in SHOWN_KINDS:
            continue
        what = fields.get("call", {}).get("name") or fields.get("result", {}).get("status")
        told.append((fields["kind"], what or fields.get("message", {}).get("text", "")))
    return told


def of_t1(transcript: str) -> list[str]:
    """The lines of a plain transcript about task t1's work."""
    return [line for line in transcript.splitlines() if line[:4] == "[t1]" or " t1 turn" in line]
