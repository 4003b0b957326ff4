"""`orchestrator chat` as a person uses it (issue 24, item 2): the real command on a
pseudo-terminal, the goal and the answers typed, the screen read with pyte: the live
view under the input line, a call's approval asked above it and answered on it,
follow-ups, commands, Ctrl+C, a resize, and the session resumable after."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.cli.terminal import Terminal

ROOT = Path(__file__).parents[2]


def script(tmp_path: Path, main: list[dict[str, object]], **fields: object) -> str:
    path = tmp_path / "script.json"
    path.write_bytes(orjson.dumps({"agents": {"main": main}, **fields}))
    return f"scripted:{path}"


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def start(opened: list[Terminal], tmp_path: Path, *args: str, cols: int = 100) -> Terminal:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    where = ["-w", str(workspace), "--sessions-dir", str(tmp_path / "s")]
    terminal = Terminal(["chat", *args, *where], cols=cols, cwd=ROOT)
    opened.append(terminal)
    return terminal


def ended(terminal: Terminal, tmp_path: Path, code: int) -> str:
    """The id of the one session `start` made, once `terminal`'s chat ended with `code`."""
    assert terminal.finish() == code
    [session] = [p.name for p in (tmp_path / "s").iterdir() if p.is_dir()]
    return session


def test_a_goal_an_approval_a_follow_up_and_the_commands(
    tmp_path: Path, chat: list[Terminal]
) -> None:
    write = {"name": "write_file", "arguments": {"path": "a.txt", "content": "hello\n"}}
    model = script(
        tmp_path,
        [
            {"text": "Writing it.", "tool_calls": [write]},
            {"text": "Written a.txt."},
            {"text": "Seen your follow-up."},
        ],
    )
    t = start(chat, tmp_path, "-m", model)
    t.see("goal›")
    assert "What should the agents do?" in t.text()
    t.type(b"write a.txt\r")
    # The question above the input line; the view under it shows main needing input.
    t.see("answer›")
    t.see("Allow? [y]es")
    t.see("needs input")
    lines = t.lines()
    question = lines.index("write_file wants to write a.txt (6 bytes, 1 lines):")
    assert lines[question + 1] == "  │ hello"
    assert lines[question + 2].startswith("Allow? [y]es")
    [asking] = [line for line in lines if line.startswith("? main main  needs input")]
    assert asking.endswith("approve? write_file")
    assert lines[-1].startswith("1 needs input · ")
    t.type(b"y\r")
    t.see("— completed")
    assert (tmp_path / "ws" / "a.txt").read_text() == "hello\n"
    assert "answer› y" in t.lines()
    t.see("1 done · ")  # the status line, under the input line
    t.type(b"thanks, anything else?\r")
    t.see("Seen your follow-up.")
    t.see("✉ m1 instruction user → main: thanks, anything else?")
    t.type(b"/tasks\r")
    t.see("◆ main completed")
    t.type(b"/frob\r")
    t.see("unknown command /frob; /help lists them")
    t.type(b"\x03")
    t.see("Ctrl+C again (or /quit) to leave")
    t.type(b"\x03")
    session = ended(t, tmp_path, 0)
    resume = f"orchestrator chat --resume {session} --sessions-dir {tmp_path / 's'}"
    assert f"continue it with: {resume}" in t.text().replace("\n", "")


def test_ctrl_c_stops_a_running_turn_and_the_session_resumes_in_chat(
    tmp_path: Path, chat: list[Terminal]
) -> None:
    slow = {"name": "shell", "arguments": {"command": "sleep 60"}}
    model = script(tmp_path, [{"text": "Waiting.", "tool_calls": [slow]}, {"text": "Back."}])
    t = start(chat, tmp_path, "wait a minute", "-m", model, "--yes")
    t.see("→ shell command='sleep 60'")
    t.see("1 running · ")
    t.type(b"\x03")
    t.see("turn stopped; the session is interrupted")
    t.type(b"/quit\r")
    session = ended(t, tmp_path, 130)
    assert f"orchestrator chat --resume {session}" in t.text()
    # Summed up as a run stopped by Ctrl+C is: where its work is, what it spent.
    assert f"session {session} interrupted" in t.lines()
    assert f"  workspace  {tmp_path / 'ws'}" in t.lines()
    assert any(line.startswith("  spent      ") for line in t.lines())
    # Talk to it again: the interrupted call is reported, the main agent goes on.
    again = Terminal(
        ["chat", "--resume", session, "--sessions-dir", str(tmp_path / "s"), "-m", model],
        cwd=ROOT,
    )
    chat.append(again)
    again.see(f"chatting in session {session}")
    again.see("Back.")
    again.see("— completed")
    again.type(b"/quit\r")
    assert again.finish() == 0


def test_a_resize_lays_the_view_out_at_the_new_width(tmp_path: Path, chat: list[Terminal]) -> None:
    model = script(tmp_path, [{"text": "Done at once."}])
    t = start(chat, tmp_path, "say it", "-m", model, cols=120)
    t.see("— completed")
    t.see("1 done · ")
    t.resize(60, 30)
    t.type(b"/help\r")  # something printed after the resize
    t.see("/todos add TEXT")

    def laid_out(lines: list[str]) -> bool:  # cut to the new width, less one column
        rows = [line for line in lines if line.startswith("✓ main main")]
        return len(rows) == 1 and len(rows[0]) < 60

    t.see_that(laid_out, "main's row at the new width")
    t.type(b"/quit\r")
    assert t.finish() == 0


def test_a_reply_streamed_slowly_stays_on_the_screen(tmp_path: Path, chat: list[Terminal]) -> None:
    # As a real provider streams: a piece of text every 0.3 s. A piece of a line printed
    # above the input line was drawn on the input line's row and erased by its redraw.
    said = "Writing the file now, one word at a time."
    write = {"name": "write_file", "arguments": {"path": "a.txt", "content": "hi\n"}}
    replies = [{"text": said, "tool_calls": [write]}, {"text": "Written it, slowly too."}]
    model = script(tmp_path, replies, chunk_latency=0.3)
    t = start(chat, tmp_path, "write a.txt", "-m", model, "--yes")
    t.see("— completed")
    t.see("Written it, slowly too.")
    lines = t.lines()
    assert said in lines
    assert not any(line.startswith("›") and "Writing" in line for line in lines)
    t.type(b"/quit\r")
    assert t.finish() == 0


def test_rewind_goes_on_chatting_in_the_fork(tmp_path: Path, chat: list[Terminal]) -> None:
    made = {"name": "shell", "arguments": {"command": "echo made > gen.txt"}}
    model = script(tmp_path, [{"text": "Making it.", "tool_calls": [made]}, {"text": "Made."}])
    t = start(chat, tmp_path, "make gen.txt", "-m", model, "--yes")
    t.see("— completed")
    assert (tmp_path / "ws" / "gen.txt").exists()
    t.type(b"/rewind\r")
    t.see("/rewind POINT goes back to one")
    [start_point] = [
        line.split()[0] for line in t.lines() if "checkpoint  workspace as a run started" in line
    ]
    t.type(f"/rewind {start_point}\r".encode())
    t.see("removed     gen.txt")
    assert not (tmp_path / "ws" / "gen.txt").exists()
    # The chat goes on in the fork, from the run's start: the script's run again.
    t.see_that(lambda lines: lines.count("Made.") == 2, "the fork's run")
    t.see_that(lambda lines: sum(line.startswith("— completed") for line in lines) == 2, "its end")
    assert (tmp_path / "ws" / "gen.txt").exists()
    sessions = {p.name for p in (tmp_path / "s").iterdir() if p.is_dir()}
    t.type(b"/quit\r")
    assert t.finish() == 0
    text = t.text().replace("\n", "")
    [parent] = [s for s in sessions if f"the path left stays session {s}" in text]
    [fork] = sessions - {parent}
    assert f"continue it with: orchestrator chat --resume {fork}" in text
