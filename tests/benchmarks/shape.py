"""The conversation shape the flat-core figures are measured on (issue 7): a user goal,
then rounds of one tool call and its 200-byte result, answered instantly by a scripted
model, driven through `create_session` / `open_session` / `drive` like a real run."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import orchestrator.session.live
from orchestrator.models.base import ModelRequest
from orchestrator.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from orchestrator.session.live import create_session, open_session
from orchestrator.state.events import AssistantReplied, Event, NullSink
from orchestrator.state.settings import SessionSettings
from orchestrator.store import Durability
from orchestrator.team.drive import RunSettings, drive
from orchestrator.tools import (
    PermissionPolicy,
    Tool,
    ToolContext,
    ToolOutput,
    ToolRegistry,
    approve_all,
)

PAYLOAD = "x" * 200


class RoundArgs(BaseModel):
    """The round a call is made in: a model that repeats the very same call is stopped
    as stalled by the assessment (`assessment.REPEATS`), so each round's call differs."""

    n: int = 0


class Fixed(Tool[RoundArgs]):
    """A trivial read-only tool: always the same 200 bytes."""

    name = "fixed"
    description = "Returns 200 bytes."
    args_model = RoundArgs
    read_only = True
    idempotent = True

    async def run(self, args: RoundArgs, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(PAYLOAD)


def responder(rounds: int) -> Callable[[ModelRequest], ScriptedReply]:
    """One tool call per round for `rounds` rounds, then a final answer. No usage is
    given, so the scripted model's own token estimate runs every call, as it would."""

    def reply(request: ModelRequest) -> ScriptedReply:
        if request.step < rounds:
            return ScriptedReply(
                tool_calls=(ScriptedCall(name="fixed", arguments={"n": request.step}),)
            )
        return ScriptedReply(text="done")

    return reply


@dataclass
class RoundClock:
    """A UI sink that notes when each model reply arrives: the wall time of each round,
    and the CPU time this process spent on it (which other processes on a shared
    machine move much less)."""

    marks: list[float] = field(default_factory=list)
    cpu_marks: list[float] = field(default_factory=list)

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        if isinstance(event, AssistantReplied):
            self.marks.append(time.perf_counter())
            self.cpu_marks.append(time.process_time())

    def round_ms(self, *, cpu: bool = False) -> list[float]:
        marks = self.cpu_marks if cpu else self.marks
        return [(b - a) * 1000 for a, b in itertools.pairwise(marks)]


def bench_session(root: Path) -> tuple[str, Path]:
    """A session made under `root` for a benchmark, whose model is given in code (the
    script file it names stays empty): its id and directory."""
    script = root / "unused-script.json"
    script.write_text('{"agents": {}}')
    return create_session(root, goal="bench", model=f"scripted:{script}", workspace=None)


def bench_settings(respond: Callable[[ModelRequest], Any], **more: Any) -> RunSettings:
    """A benchmark's run: a scripted model named `scripted:bench` answering with
    `respond`, the fixed tool, no events shown, every call allowed, and `more` (which may
    replace any of them)."""
    wiring: dict[str, Any] = {
        "tools": ToolRegistry([Fixed()]),
        "ui": NullSink(),
        "policy": PermissionPolicy(),
        "approve": approve_all,
    }
    return RunSettings(model=ScriptedModel(respond, name="scripted:bench"), **(wiring | more))


async def run_session(
    root: Path, rounds: int, durability: Durability, clock: RoundClock | None = None
) -> Path:
    """Make and run one session of `rounds` rounds; returns its directory."""
    session_id, directory = bench_session(root)
    settings = bench_settings(
        responder(rounds),
        ui=clock or RoundClock(),
        session=SessionSettings(max_rounds=rounds + 1),
    )
    async with open_session(root, session_id, durability=durability, warn=print) as live:
        result = await drive(live, settings)
    assert result.status == "completed", result
    return directory


@dataclass
class SnapshotMeter:
    """Counts the snapshot bytes a session writes (wraps the session's atomic write)."""

    writes: int = 0
    bytes: int = 0

    def __enter__(self) -> SnapshotMeter:
        self._real = orchestrator.session.live.write_atomic

        def counting(path: Any, data: bytes, **options: Any) -> None:
            self.writes += 1
            self.bytes += len(data)
            self._real(path, data, **options)

        orchestrator.session.live.write_atomic = counting
        return self

    def __exit__(self, *exc: object) -> None:
        orchestrator.session.live.write_atomic = self._real
