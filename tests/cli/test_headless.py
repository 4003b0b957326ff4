"""Headless runs are honest (issue 19, item 11): with no terminal and no --yes, the run
says at its start what will be refused; a call refused for want of approval is journaled
as such (`unapproved`), and a run with one ends `blocked` (exit 3) unless its
verification passed, its summary listing the refused calls; a resume reads them from the
journal."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import orjson
import pytest

from tests.scenes import orchestrator as command

ROOT = Path(__file__).parents[2]
HELLO = f"scripted:{ROOT / 'examples' / 'hello-script.json'}"  # a write, then a shell call
NOTICE = "no terminal and no --yes: calls of "
LISTED = "refused for want of approval"


def orchestrator(*args: str, sessions: Path) -> subprocess.CompletedProcess[str]:
    """The command with no terminal: stdin is /dev/null."""
    return command(*args, ORCHESTRATOR_SESSIONS_DIR=str(sessions))


def _refused(out: str) -> list[str]:
    """The refused calls the summary lists: the indented lines under its header."""
    lines = out.split("\n")
    if not any(line.startswith(LISTED) for line in lines):
        return []
    start = next(i for i, line in enumerate(lines) if line.startswith(LISTED))
    return [line.strip() for line in itertools.takewhile(_indented, lines[start + 1 :])]


def _indented(line: str) -> bool:
    return line.startswith("  ")


@pytest.mark.parametrize(
    ("flags", "code", "notice", "refused"),
    [
        (
            [],
            3,
            "write_file, edit_file, shell need approval",
            [
                "main write_file: path='hello.py' content=\"print('hello')\\n\"",
                "main shell: command='python hello.py'",
            ],
        ),
        (
            ["--allow", "write_file=allow"],
            3,
            "edit_file, shell need approval",
            ["main shell: command='python hello.py'"],
        ),
        (
            ["--allow", "write_file=allow", "--allow", "shell:python *=allow"],
            0,
            "edit_file, shell (but commands matching 'python *') need approval",
            [],
        ),
        # Verification passed: the run is done, and its summary still lists the refusals.
        (
            ["--verify", "true"],
            0,
            "write_file, edit_file, shell",
            ["main write_file", "main shell"],
        ),
        (["--yes"], 0, None, []),
    ],
    ids=["nothing-allowed", "write-allowed", "all-it-needs-allowed", "verified", "yes"],
)
def test_a_headless_run_says_what_it_refuses_and_ends_by_it(
    tmp_path: Path, flags: list[str], code: int, notice: str | None, refused: list[str]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    result = orchestrator(
        "run", "hello", "--model", HELLO, "-w", str(ws), *flags, sessions=tmp_path
    )
    assert result.returncode == code, result.stderr
    # Without a terminal, every line for people is on stdout, with the transcript.
    assert result.stderr == ""
    notices = [line for line in result.stdout.split("\n") if line.startswith(NOTICE)]
    if notice is None:
        assert notices == []
    else:
        [line] = notices  # one line, at the start
        assert notice in line
        assert "--yes" in line
        assert "--allow TOOL=allow" in line
    listed = _refused(result.stdout)
    assert len(listed) == len(refused)
    for line, start in zip(listed, refused, strict=True):
        assert line.startswith(start)
    ending = f"blocked ({len(refused)} call" if code == 3 else "completed"
    # The summary last: how it ended, where, what it spent, and (blocked) what next.
    lines = result.stdout.split("\n")
    summary = lines[-6 if code == 3 else -5 :]
    assert ending in summary[0]
    assert summary[1] == f"  workspace  {ws}"
    if code == 3:
        assert summary[-2].startswith("  next       to let them run, resume with approval")
    assert (ws / "hello.py").exists() == ("--yes" in flags or "write_file=allow" in flags)


def test_a_refusal_is_a_journaled_fact_a_resume_reads_again(tmp_path: Path) -> None:
    """A subagent's write refused: the run ends blocked naming the task; resumed from its
    journal alone (no snapshot), the session is blocked by the same refusal, listed again."""
    script = tmp_path / "script.json"
    write = {"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}
    script.write_bytes(
        orjson.dumps(
            {
                "agents": {
                    "main": [
                        {
                            "tool_calls": [
                                {
                                    "name": "delegate",
                                    "arguments": {"description": "d", "prompt": "p"},
                                }
                            ]
                        },
                        {"tool_calls": [{"name": "wait_tasks", "arguments": {"timeout": 60}}]},
                        {"text": "done"},
                    ],
                    "t1": [
                        {"tool_calls": [write]},
                        {"tool_calls": [{"name": "complete", "arguments": {"summary": "s"}}]},
                    ],
                }
            }
        )
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    first = orchestrator(
        "run", "g", "--model", f"scripted:{script}", "-w", str(ws), sessions=tmp_path
    )
    assert first.returncode == 3, first.stderr
    assert _refused(first.stdout) == ["t1 write_file: path='a.txt' content='x'"]
    [session] = [p for p in tmp_path.iterdir() if (p / "journal.jsonl").exists()]
    journal = (session / "journal.jsonl").read_text()
    assert '"status":"unapproved"' in journal
    (session / "snapshot.json").unlink(missing_ok=True)
    again = orchestrator("resume", session.name, sessions=tmp_path)
    assert again.returncode == 3, again.stderr
    assert _refused(again.stdout) == ["t1 write_file: path='a.txt' content='x'"]
    assert "resume" in again.stdout.split("\n")[-2]
    assert "--yes --message" in again.stdout
    assert not (ws / "a.txt").exists()
