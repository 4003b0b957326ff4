"""Event sinks for people and programs: a live, readable transcript, or JSON lines."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TextIO

import orjson

from orchestrator.events import (
    AgentStarted,
    AssistantReplied,
    Event,
    MessageAdded,
    Notice,
    PermissionGranted,
    SessionStatusChanged,
    TextStreamed,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
    UsageUpdated,
)
from orchestrator.messages import ToolResult
from orchestrator.text import abbreviate, visible

ARG_WIDTH = 60
RESULT_WIDTH = 100


def format_arguments(raw: str) -> str:
    """`path='a.py' content='def f…'`: each argument abbreviated, or the raw text if it
    is not a JSON object."""
    try:
        parsed = orjson.loads(raw or "{}")
    except orjson.JSONDecodeError:
        return abbreviate(raw, ARG_WIDTH)
    if not isinstance(parsed, dict):
        return abbreviate(raw, ARG_WIDTH)
    return " ".join(
        f"{key}={abbreviate(repr(value), ARG_WIDTH // 2)}" for key, value in parsed.items()
    )


class Style:
    """ANSI styling, or none at all (pipes, NO_COLOR)."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)


class TranscriptSink:
    """Prints what agents do as it happens: streamed text, each tool call with its
    arguments abbreviated, and its outcome."""

    def __init__(self, out: TextIO, *, color: bool) -> None:
        self.out = out
        self.style = Style(color)
        self._mid_line = False

    def _line(self, text: str) -> None:
        # Everything shown comes from models and tools: it is made visible as it is
        # composed (below), never written raw; the sink's own styling is added after.
        if self._mid_line:
            self.out.write("\n")
            self._mid_line = False
        self.out.write(text + "\n")
        self.out.flush()

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        s = self.style
        match event:
            case AgentStarted(agent=agent, role=role):
                self._line(s.bold(f"● {visible(agent)}") + s.dim(f" ({visible(role)})"))
            case TextStreamed(text=text):
                self.out.write(visible(text))
                self.out.flush()
                self._mid_line = True
            case AssistantReplied():
                if self._mid_line:
                    self.out.write("\n")
                    self._mid_line = False
            case ToolCallStarted(call=call):
                self._line(
                    s.cyan(f"  → {visible(call.name)}")
                    + " "
                    + s.dim(visible(format_arguments(call.arguments)))
                )
            case ToolCallFinished(result=result):
                self._line(self._outcome(result))
            case TurnEnded(reason=reason, rounds=rounds, detail=detail):
                mark = s.green("✔") if reason == "completed" else s.yellow("■")
                extra = f": {visible(detail)}" if detail else ""
                agent = visible(event.agent)
                self._line(f"{mark} {agent} turn {reason} after {rounds} rounds{extra}")
            case Notice(message=message):
                self._line(s.yellow(f"! {visible(message)}"))
            case PermissionGranted(tool=tool, pattern=pattern):
                what = f"{tool} commands matching {pattern!r}" if pattern else tool
                self._line(s.dim(f"  (allowed {visible(what)} for this session)"))
            case MessageAdded() | TurnStarted() | UsageUpdated() | SessionStatusChanged():
                # The command line says how the session ended, once, on stderr.
                pass

    def _outcome(self, result: ToolResult) -> str:
        first = visible(abbreviate(result.content, RESULT_WIDTH))
        name = visible(result.name)
        if result.status == "ok":
            return "    " + self.style.green(f"✓ {name}: ") + self.style.dim(first)
        return "    " + self.style.red(f"✗ {name} {result.status}: ") + first


class JsonLinesSink:
    """One JSON object per event per line, for other programs: the event's fields, plus
    `session` (its id), `time` (UTC, ISO 8601) and, for an event the journal keeps,
    `seq` (its record's journal seq, given by `seq_of` right after it was journaled).
    With agents running at once, lines may come out of seq order: `seq` is the order."""

    def __init__(
        self,
        out: TextIO,
        *,
        session: str = "",
        seq_of: Callable[[Event], int | None] | None = None,
    ) -> None:
        self.out = out
        self.session = session
        self.seq_of = seq_of or (lambda event: None)

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        line = event.model_dump(mode="json")
        if self.session:
            line["session"] = self.session
        seq = self.seq_of(event)
        if seq is not None:
            line["seq"] = seq
        line["time"] = datetime.now(UTC).isoformat(timespec="milliseconds")
        self.out.write(orjson.dumps(line).decode() + "\n")
        self.out.flush()
