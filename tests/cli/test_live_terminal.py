"""The live view as a person sees it (issue 24, item 1): the real command line on a
pseudo-terminal (stdin, stdout and stderr), its output fed to pyte, the screen read
after the run. The final frame stays under the transcript's lines, the summary below
it; an approval asked while the view runs is answered at the terminal and the screen
stays readable; `--plain` gives today's transcript."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass
from pathlib import Path

import orjson
import pyte

COLS, ROWS = 120, 50


@dataclass
class Shown:
    code: int
    screen: list[str]  # the final screen's lines, right-stripped
    raw: bytes  # every byte written to the terminal

    def text(self) -> str:
        return "\n".join(self.screen)


def run_on_screen(args: list[str], *, answer: tuple[bytes, bytes] | None = None) -> Shown:
    """`orchestrator ARGS` on a pseudo-terminal of COLS x ROWS; `answer`: (what to wait
    for on the screen, what to type then)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "ORCHESTRATOR_PLAIN")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**env, "TERM": "xterm-256color"},
    )
    os.close(slave)
    screen = pyte.Screen(COLS, ROWS)
    stream = pyte.ByteStream(screen)
    raw = b""
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every end of the terminal closed
                break
            if not chunk:
                break
            raw += chunk
            stream.feed(chunk)
            if answer is not None and answer[0] in raw:
                os.write(master, answer[1])
                answer = None
        proc.wait(timeout=30)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return Shown(proc.returncode, [line.rstrip() for line in screen.display], raw)


def test_the_demo_ends_with_its_tree_done_under_the_transcript(tmp_path: Path) -> None:
    shown = run_on_screen(["demo", "-w", str(tmp_path / "ws"), "--sessions-dir", str(tmp_path)])
    assert shown.code == 0, shown.text()
    lines = shown.screen
    tree = [n for n, line in enumerate(lines) if "t1 statistics module" in line]
    assert len(tree) == 1, shown.text()  # the last frame, once (the summary names t1 apart)
    top = tree[0] - 2  # the planner, then the builder, then its tasks
    assert lines[top].startswith("✓ planner planner")
    assert lines[top + 1].startswith("✓ main builder")
    # The plan's four tasks, and t2's test run in the background (t5), under t2: done,
    # or interrupted by the kill when it ran at that instant (never run again: t2 goes on).
    for n, task in enumerate(("t1", "t2", "t5", "t3", "t4"), start=top + 2):
        assert f" {task} " in lines[n]
        assert lines[n].split()[-1] != "running"
        if task != "t5":
            assert "  done  " in lines[n], lines[n]
    t5 = lines[top + 4]
    assert "t5 shell: python test_textutil." in t5  # cut to its column
    assert "  done  " in t5 or ("  cancelled  " in t5 and "interrupt" in t5), t5
    [status] = [line for line in lines if " done · " in line and "tokens" in line]
    assert status.startswith("8 done · " if "  done  " in t5 else "7 done · 1 cancelled · ")
    assert lines.index(status) > top
    # The transcript's lines above the frame, today's summary below it.
    # (The screen keeps its last lines only: a notice more, such as a background
    # compaction dropped on a slow machine, scrolls the earliest off it.)
    above = "\n".join(lines[:top])
    assert "✔ verified: " in above
    assert "✔ verified: python -m doctest README.md passed" in shown.raw.decode()
    below = "\n".join(lines[lines.index(status) :])
    assert "tasks:" in below
    assert "completed (all 4 todos done" in below
    assert "\n✂ simulated crash" in shown.raw.decode()


def write_script(tmp_path: Path) -> str:
    """The main agent writes a file (a call a person approves), then answers."""
    script = tmp_path / "script.json"
    call = {"name": "write_file", "arguments": {"path": "a.txt", "content": "hello\n"}}
    agents = {"main": [{"tool_calls": [call]}, {"text": "written"}]}
    script.write_bytes(orjson.dumps({"agents": agents}))
    return f"scripted:{script}"


def test_an_approval_asked_under_the_view_is_answered_and_the_screen_stays_readable(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    args = ["run", "write a", "-m", write_script(tmp_path), "-w", str(ws)]
    shown = run_on_screen(
        [*args, "--sessions-dir", str(tmp_path / "s")], answer=(b"Allow? ", b"y\n")
    )
    assert shown.code == 0, shown.text()
    assert (ws / "a.txt").read_text() == "hello\n"
    lines = shown.screen
    # The frame as it stood when the question came: main needs input, about write_file.
    [asking] = [n for n, line in enumerate(lines) if "needs input" in line and "main" in line]
    assert "write_file" in lines[asking]
    # Below it the question, whole, and the answer typed.
    question = lines.index("write_file wants to write a.txt (6 bytes, 1 lines):")
    assert question > asking
    assert lines[question + 1] == "  │ hello"
    assert lines[question + 2].startswith("Allow? [y]es")
    assert lines[question + 2].endswith(": y")
    # Then the run goes on: its call's outcome above the last frame, the summary under it.
    rest = lines[question + 3 :]
    assert any("✓ write_file: " in line for line in rest), "\n".join(rest)
    [last] = [line for line in rest if line.startswith("✓ main ")]
    assert "  done  " in last
    [status] = [line for line in rest if line.startswith("1 done · ")]
    assert rest.index(status) > rest.index(last)
    assert any(line.startswith("session ") and "completed" in line for line in rest)
    # One stream at the terminal too: the session said first, the summary's rows last.
    assert lines[0].startswith("session ")
    assert " (in " in lines[0]
    assert f"  workspace  {ws}" in rest[rest.index(status) :]


def test_plain_on_a_terminal_is_todays_transcript(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    args = ["run", "write a", "-m", write_script(tmp_path), "-w", str(ws), "--yes", "--plain"]
    shown = run_on_screen([*args, "--sessions-dir", str(tmp_path / "s")])
    assert shown.code == 0, shown.text()
    text = shown.text()
    assert "  → write_file path='a.txt'" in text
    assert "✔ main turn completed after 2 rounds" in text
    assert " done · " not in text  # no status line, no tree
    assert not any(line.startswith("✓ main ") for line in shown.screen)
    # Today's transcript is coloured at a terminal; the live view draws no cursor moves.
    assert b"\x1b[1A" not in shown.raw
    assert b"\x1b[?25l" not in shown.raw  # the cursor is never hidden
