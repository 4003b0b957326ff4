"""The live view's screens as a person sees them (issue 24's tests): the command line on
a pseudo-terminal the test drives (`terminal.Terminal`: typing, resizing, Ctrl+C), pyte
as the screen, the view's clock fixed (`ORCHESTRATOR_FIXED_CLOCK`) so that elapsed times
and spinners read the same at every run. The final frame and summary of a small
delegating run are compared with `golden/live-delegated.txt` (`ORCHESTRATOR_GOLDEN=1`
writes it instead: read it by eye before committing); a resize mid-run and Ctrl+C leave
a readable screen, and Ctrl+C a resumable session."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.cli.terminal import Terminal, masked
from tests.scenes import call, matches_golden, one_task_script

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A short temporary directory: the summary's paths must fit the screen's width on
    one line, also under pytest-xdist, whose `tmp_path` is longer (`popen-gw0/`)."""
    path = Path(tempfile.mkdtemp(prefix="live-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def scripted(tmp_path: Path, agents: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The arguments of a run on the script of `agents`, in a fresh workspace, shell
    commands unsandboxed (a machine may have no sandbox), every call allowed."""
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps({"agents": agents}))
    ws = tmp_path / "ws"
    ws.mkdir()
    return ["-m", f"scripted:{script}", "-w", str(ws), "--yes", "--sandbox", "off",
            "--sessions-dir", str(tmp_path / "s")]  # fmt: skip


GREETS = [
    {"tool_calls": [call("write_file", path="hello.txt", content="hello\n")]},
    {"tool_calls": [call("complete", summary="hello.txt says hello")]},
]
DELEGATING = one_task_script("greeting", "write hello.txt", 60, GREETS, "hello.txt is written.")


def test_the_final_screen_of_a_delegating_run_is_the_golden_one(tmp_path: Path) -> None:
    terminal = Terminal(["run", "greet", *scripted(tmp_path, DELEGATING)], cols=100, rows=40)
    assert terminal.finish() == 0, terminal.text()
    lines = masked(terminal.text(), tmp_path).split("\n")
    [top] = [n for n, line in enumerate(lines) if line.startswith("✓ main main ")]
    # The transcript above the frame (its order between main's and t1's lines is the
    # scheduler's), the last frame and the summary below it as the golden file has them.
    above = set(lines[:top])
    assert {"One task.", "[t1]     ✓ write_file: wrote 6 bytes to hello.txt"} <= above
    assert "✔ main turn completed after 2 rounds" in above
    below = "\n".join(lines[top:])
    # The summary's times are the session's own, not the view's clock.
    below = re.sub(r"(?m)^(  .*? completed +)\d+\.\ds", r"\1N.Ns", below)
    below = re.sub(r"this run \d+\.\ds", "this run N.Ns", below)
    matches_golden(GOLDEN / "live-delegated.txt", below)


def waiting_for(path: Path) -> str:
    """A shell command that ends once `path` exists (the test says when, no sleep)."""
    return f"while [ ! -e {path} ]; do sleep 0.05; done"


def test_a_resize_mid_run_redraws_the_frame_at_the_new_width(tmp_path: Path) -> None:
    go = tmp_path / "go"
    agents = {"main": [{"tool_calls": [call("shell", command=waiting_for(go))]}, {"text": "ok"}]}
    terminal = Terminal(["run", "wait", *scripted(tmp_path, agents)], cols=120, rows=30)
    terminal.wait_for(rb"1 running")
    terminal.resize(60, 20)
    # The frames drawn while the run goes on (the first after the resize may have been
    # under way as it came), cut to 60 columns.
    terminal.wait_for(rb"\x1b\[J(.|\n)*\x1b\[J", after=len(terminal.raw))
    [running] = [line for line in terminal.lines() if line.startswith("● main main  running")]
    assert len(running) == 60, running
    assert running.endswith("…")
    go.touch()
    assert terminal.finish() == 0, terminal.text()
    lines = terminal.lines()
    assert all(len(line) <= 60 for line in lines)
    [frame] = [n for n, line in enumerate(lines) if line.startswith("✓ main main ")]
    assert lines[frame + 2].startswith("1 done · ")
    assert re.fullmatch(r"session \S+ completed", lines[frame + 3])
    assert sum("running" in line for line in lines) == 0  # no frame of before left behind
    assert lines[frame - 1] == "✔ main done"


def test_ctrl_c_at_the_terminal_leaves_the_frame_and_a_resumable_session(
    tmp_path: Path,
) -> None:
    agents = {
        "main": [{"tool_calls": [call("shell", command="sleep 60")]}, {"text": "slept"}],
    }
    args = scripted(tmp_path, agents)
    terminal = Terminal(["run", "sleep", *args], cols=100, rows=30)
    terminal.wait_for(rb"1 running")
    terminal.type(b"\x03")
    assert terminal.finish() == 130, terminal.text()
    lines = terminal.lines()
    [frame] = [n for n, line in enumerate(lines) if line.startswith("⊘ main main ")]
    assert "  cancelled  " in lines[frame]
    assert lines[frame - 1] == "    ✗ shell cancelled: cancelled before it finished"
    assert lines[frame + 1].startswith("1 cancelled · ")
    [session] = [p for p in (tmp_path / "s").iterdir() if p.is_dir()]
    assert lines[frame + 2] == f"session {session.name} interrupted (Ctrl+C)"
    assert lines[frame + 3] == f"  workspace  {tmp_path / 'ws'}"
    assert lines[frame + 6].startswith(
        f"  next       continue it with: orchestrator resume {session.name}"
    )
    assert not any("Traceback" in line or "running" in line for line in lines)
    assert orjson.loads((session / "session.json").read_bytes())["status"] == "interrupted"
    resumed = subprocess.run(
        [sys.executable, "-m", "orchestrator", "resume", "--last", "--yes", "--sandbox", "off",
         "--sessions-dir", str(tmp_path / "s")],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "ORCHESTRATOR_PLAIN": "1"},
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert f"session {session.name} completed" in resumed.stdout


PLAIN = {
    "main": [
        {
            "text": "I'll plan it, then write it.",
            "tool_calls": [
                call("todo_write", todos=[{"content": "write a.txt"}, {"content": "check it"}]),
            ],
        },
        {
            "tool_calls": [
                call("write_file", path="a.txt", content="hello\n"),
                call("todo_update", id="1", status="completed"),
            ]
        },
        {
            "tool_calls": [
                call("shell", command="cat a.txt"),
                call("todo_update", id="2", status="completed"),
            ]
        },
        {"text": "a.txt says hello."},
    ],
}


def test_the_plain_mode_is_the_golden_transcript_byte_for_byte(tmp_path: Path) -> None:
    # Without a terminal (a pipe) and with NO_COLOR: the transcript alone, the session
    # line first and the summary last, every byte as the golden file has it (what moves
    # from run to run masked: the session's id and directory, its durations).
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", "write a", *scripted(tmp_path, PLAIN)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    text = masked(result.stdout, tmp_path)
    text = re.sub(r"(?m)^(  main +completed +)\d+\.\ds", r"\1N.Ns", text)
    text = re.sub(r"this run \d+\.\ds", "this run N.Ns", text)
    assert "\x1b[" not in text  # no colour: NO_COLOR, and no terminal
    matches_golden(GOLDEN / "plain-run.txt", text)
