"""Every event a library user can receive is importable from `orchestrator` and described
in docs/library.md ("The events"), read from the `Event` union itself so that neither can
fall behind it; and the command line's renderers work as sinks of a program's own."""

from __future__ import annotations

import io
import re
import typing
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest

import orchestrator as orc

LIBRARY_MD = Path(__file__).parents[1] / "docs" / "library.md"


def event_classes() -> list[type[Any]]:
    return list(typing.get_args(orc.Event))


def fields(cls: type[Any]) -> list[str]:
    """An event's own fields (`agent`, on every event, is the table's column)."""
    return [f.name for f in msgspec.structs.fields(cls) if f.name != "agent"]


def carried(classes: list[type[Any]]) -> set[type[Any]]:
    """The structs that events' fields hold, at any depth (messages, todo items, plans)."""
    found: set[type[Any]] = set()

    def walk(tp: Any) -> None:
        for arg in typing.get_args(tp):
            walk(arg)
        if isinstance(tp, type) and issubclass(tp, msgspec.Struct) and tp not in found:
            found.add(tp)
            for field in msgspec.structs.fields(tp):
                walk(field.type)

    for cls in classes:
        for field in msgspec.structs.fields(cls):
            walk(field.type)
    return found - set(classes)


def documented_rows() -> dict[str, list[str]]:
    """The rows of the events' tables, by kind: [class, agent, journaled, fields]."""
    text = LIBRARY_MD.read_text()
    section = text[text.index("### The events\n") : text.index("### Printing what happens\n")]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        kind = re.fullmatch(r"`(\w+)`", cells[0]) if len(cells) == 5 else None
        if kind and cells[1] != "class":  # not the header
            assert kind[1] not in rows, f"{kind[1]} is documented twice"
            rows[kind[1]] = cells[1:]
    return rows


def test_the_union_is_read() -> None:
    # The checks below are only as good as this list: the union has its 26 kinds.
    kinds = {cls.__struct_config__.tag for cls in event_classes()}
    assert len(kinds) == len(event_classes()) >= 26
    assert {"task_created", "message_posted", "tool_call_finished", "plan_submitted"} <= kinds


def test_every_event_class_is_exported_by_its_name() -> None:
    for cls in event_classes():
        assert cls.__name__ in orc.__all__, cls.__name__
        assert getattr(orc, cls.__name__) is cls


def test_what_events_carry_is_exported_and_documented() -> None:
    text = LIBRARY_MD.read_text()
    names = {cls.__name__ for cls in carried(event_classes())}
    assert {"ToolCall", "ToolResult", "AssistantMessage", "Usage", "TodoItem", "Plan"} <= names
    for cls in carried(event_classes()):
        assert getattr(orc, cls.__name__, None) is cls, f"{cls.__name__} is not exported"
        assert f"`{cls.__name__}`" in text, f"{cls.__name__} is not in docs/library.md"


def test_every_event_is_documented_with_its_class_fields_and_journaling() -> None:
    rows = documented_rows()
    missing = []
    for cls in event_classes():
        kind = cls.__struct_config__.tag
        row = rows.pop(kind, None)
        if row is None:
            missing.append(f"{kind}: no row")
            continue
        name, agent, journaled, described = row
        if name != f"`{cls.__name__}`":
            missing.append(f"{kind}: class {name}, not `{cls.__name__}`")
        if not agent:
            missing.append(f"{kind}: whose agent it is")
        if journaled.startswith("yes") != cls.persist:
            missing.append(f"{kind}: journaled says {journaled!r}")
        missing += [f"{kind}.{f}" for f in fields(cls) if f"`{f}`" not in described]
    assert not missing, "docs/library.md, The events, lacks:\n" + "\n".join(missing)
    assert not rows, f"documented but no longer in the Event union: {sorted(rows)}"


def respond(request: orc.ModelRequest) -> orc.ScriptedReply:
    """The main agent writes a file, then says it is done."""
    last = request.messages[-1]
    if isinstance(last, orc.ToolResult):
        return orc.ScriptedReply(text="Wrote note.txt.")
    call = orc.ScriptedCall(name="write_file", arguments={"path": "note.txt", "content": "hi"})
    return orc.ScriptedReply(text="Writing it.", tool_calls=(call,))


async def run_with(tmp_path: Path, ui: orc.EventSink) -> orc.RunResult:
    session_id, _ = orc.create_session(
        tmp_path / "sessions", goal="write a note", model="python:respond", workspace=None
    )
    settings = orc.RunSettings(
        model=orc.ScriptedModel(respond),
        tools=orc.workspace_tools(),
        ui=ui,
        policy=orc.PermissionPolicy(),
        approve=orc.approve_all,
    )
    async with orc.open_session(tmp_path / "sessions", session_id, warn=print) as live:
        return await orc.drive(live, settings)


async def test_the_transcript_sink_prints_a_run_to_standard_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = await run_with(tmp_path, orc.TranscriptSink())
    assert result.status == "completed"
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "● main (main)",
        "Writing it.",
        "  → write_file path='note.txt' content='hi'",
        "    ✓ write_file: wrote 2 bytes to note.txt",
        "Wrote note.txt.",
        "✔ main turn completed after 2 rounds",
        "✔ main done",
    ]
    assert "\x1b[" not in out  # captured output is not a terminal: no colour


async def test_the_json_lines_sink_writes_every_event_as_event_json(tmp_path: Path) -> None:
    out = io.StringIO()
    seen = orc.ListSink()
    await run_with(tmp_path, orc.FanOut([orc.JsonLinesSink(out), seen]))
    lines = [orjson.loads(line) for line in out.getvalue().splitlines()]
    assert [line.pop("time") for line in lines]  # every line has its time
    assert lines == [orc.event_json(event) for event in seen.events]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_the_transcript_is_coloured_on_a_terminal_unless_no_color(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    event = orc.TurnEnded(agent="main", reason="completed", rounds=1)
    monkeypatch.delenv("NO_COLOR", raising=False)
    for out, colour in [(Terminal(), True), (io.StringIO(), False)]:
        await orc.TranscriptSink(out).emit(event)
        assert ("\x1b[" in out.getvalue()) is colour
    monkeypatch.setenv("NO_COLOR", "1")
    terminal = Terminal()
    await orc.TranscriptSink(terminal).emit(event)
    assert "\x1b[" not in terminal.getvalue()
    await orc.TranscriptSink(terminal, color=True).emit(event)  # said outright, it colours
    assert "\x1b[" in terminal.getvalue()


async def test_the_permission_types_are_the_face_s_own() -> None:
    # What a library user writes a policy and an approver with, from `orchestrator` alone.
    policy = orc.PermissionPolicy(rules=[orc.Rule("shell", "allow", "pytest *")])
    tests = orc.ToolCall(id="c1", name="shell", arguments='{"command": "pytest -q"}')
    other = orc.ToolCall(id="c2", name="shell", arguments='{"command": "rm -r x"}')
    assert policy.decide(tests, read_only=False) == "allow"
    assert policy.decide(other, read_only=False) == "ask"
    granted = [orc.Grant("shell", "rm *")]
    assert policy.decide(other, read_only=False, grants=granted) == "allow"
    assert isinstance(await orc.deny_all(other), orc.Unasked)
