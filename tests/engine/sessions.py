"""A session on the dbos engine for the tests of tasks on workers (`Setup`), and the
scripts they run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

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
    open_session,
)
from orchestrator.engine import dbos_workers, sqlite_url
from orchestrator.models.scripted import parse_script
from orchestrator.team.runtime import TeamHook
from orchestrator.tools import PermissionPolicy, approve_all, workspace_tools
from tests.scenes import call


def main_script(*delegations: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"tool_calls": list(delegations)},
        *[{"tool_calls": [call("wait_tasks")]} for _ in range(3)],
        *[{"text": f"done ({n})"} for n in range(4)],
    ]


TWO_TASKS: dict[str, Any] = {
    "agents": {
        "main": main_script(
            call("delegate", description="a", prompt="write a", write_scope=["a.txt"]),
            call("delegate", description="b", prompt="write b", write_scope=["b.txt"]),
        ),
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
        spec = f"scripted:{self.script_file}"
        settings = RunSettings(
            on_team=on_team,
            model=ScriptedModel(parse_script(self.script)),
            tools=workspace_tools(),
            ui=sink if sink is not None else ListSink() if ui is None else Notices(ui),
            policy=PermissionPolicy(),
            approve=approve_all,
            runner=InProcessRunner
            if local
            else dbos_workers(self.url, model=spec, workspace=self.task_workspace),
        )
        async with open_session(self.root, self.session_id, warn=lambda _: None) as live:
            return await drive(live, settings)

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
