"""File names that are not UTF-8 (issue 37, item 8): carried escaped (`bad\\xff.txt`, with
a note saying so) through every tool, the change check, the journal and a resume, never
a crash; `grep` searches a file that is not UTF-8 (each byte that is not read as U+FFFD)
and says so. Real sessions on disk, the scripted model, real commands; the last test the
CLI, run and resumed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import orchestrator as orc
from orchestrator import ModelRequest, ScriptedModel, ScriptedReply
from orchestrator.text import escaped, unescaped
from orchestrator.tools.files import ESCAPED_NOTE
from tests.scenes import TEAM, c, reply, run_team

BAD = os.fsdecode(b"bad\xff.txt")  # as Python carries it: a lone surrogate
DIR = os.fsdecode(b"d\xfe")


def results(request: ModelRequest) -> list[str]:
    return [str(getattr(m, "content", "")) for m in request.messages if hasattr(m, "call_id")]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    where = tmp_path / "work"
    (where / DIR).mkdir(parents=True)
    (where / BAD).write_bytes(b"caf\xe9 in latin-1\n")  # a name and a content not UTF-8
    (where / DIR / "notes.txt").write_text("café in utf-8\n")
    (where / "image.bin").write_bytes(b"\x89PNG\x00\xffcaf\x00")
    return where


def test_the_escape_is_one_form_that_goes_back() -> None:
    assert escaped(BAD) == "bad\\xff.txt"
    assert escaped("café/ok.txt") == "café/ok.txt"  # UTF-8 stays as it is
    assert escaped(os.fsdecode(b"caf\xc3")) == "caf\\xc3"  # a cut UTF-8 sequence
    assert escaped("x\ud800") == "x\\ud800"  # a lone surrogate no byte gives
    assert unescaped(escaped(BAD)) == BAD
    assert escaped(f"{DIR}/{BAD}").encode()  # encodable, as JSON and the journal need


async def test_list_files_grep_and_read_file_carry_such_names(
    workspace: Path, tmp_path: Path
) -> None:
    said: dict[str, str] = {}

    def main(request: ModelRequest) -> ScriptedReply:
        calls = [
            c("list_files"),
            c("grep", pattern="caf"),
            c("grep", pattern="utf", path="d\\xfe"),  # a directory named as shown
            c("read_file", path="bad\\xff.txt"),  # a file named as shown
            c("edit_file", path="bad\\xff.txt", old_text=" in ", new_text=" IN "),
        ]
        names = ["list", "grep", "grep_dir", "read", "edit"]
        if request.step:
            said[names[request.step - 1]] = results(request)[-1]
        if request.step < len(calls):
            return reply("", calls[request.step])
        return reply("done")

    result = await run_team("g", main, workspace, tmp_path)
    assert result.status == "completed", result.detail
    assert said["list"] == f"bad\\xff.txt\nd\\xfe/notes.txt\nimage.bin\n{ESCAPED_NOTE}"
    assert said["grep"].splitlines() == [
        "bad\\xff.txt:1:caf\ufffd in latin-1",
        "d\\xfe/notes.txt:1:café in utf-8",
        "image.bin: binary file matches",
        "[1 file is not UTF-8: searched with each byte that is not UTF-8 read as U+FFFD "
        "(\ufffd), as read_file shows it]",
        ESCAPED_NOTE,
    ]
    assert said["grep_dir"].splitlines() == ["d\\xfe/notes.txt:1:café in utf-8", ESCAPED_NOTE]
    assert said["read"] == "caf\ufffd in latin-1\n"
    assert said["edit"] == "edited bad\\xff.txt"
    assert (workspace / BAD).read_bytes() == b"caf\xe9 IN latin-1\n"  # the file, not a new one
    assert not (workspace / "bad\\xff.txt").exists()
    journal = (result.session_dir / "journal.jsonl").read_text()  # type: ignore[operator]
    assert "bad\\\\xff.txt" in journal  # (JSON escapes the backslash)


async def test_a_subagents_command_making_such_names_is_checked_not_crashed(
    workspace: Path, tmp_path: Path
) -> None:
    # (Inside its scope: the sandbox refuses a write outside it.)
    made = "mkdir -p sub; touch sub/new$(printf '\\377').txt sub/out$(printf '\\376')"
    seen: list[str] = []

    def brain(request: ModelRequest) -> ScriptedReply:
        if request.agent == "main":
            if request.step == 0:
                return reply("", c("delegate", description="d", prompt="p", write_scope=["sub"]))
            if request.step == 1:
                return reply("", c("wait_tasks"))
            seen.append(results(request)[-1])
            return reply("done")
        if request.step == 0:
            return reply("", c("shell", command=made))
        if request.step == 1:
            seen.append(results(request)[-1])
            # The names as shown, given back: the file goes, the risk is named.
            return reply("", c("shell", command="rm sub/out*"))
        risks = ["made sub/out\\xfe by mistake, removed it"]
        return reply(
            "", c("complete", summary="ok", files_changed=["sub/new\\xff.txt"], risks=risks)
        )

    result = await run_team("g", brain, workspace, tmp_path)
    assert result.status == "completed", result.detail
    assert (
        seen[0] == "exit code 0\n\n[files changed by this command: sub/new\\xff.txt, sub/out\\xfe]"
    )
    assert "t1 [completed]" in seen[1]
    state = orc.load_state(result.session_dir, warn=print)  # type: ignore[arg-type]
    task = state.tasks.get("t1")
    assert task is not None
    assert task.state == "completed"


def test_a_run_and_its_resume_through_the_cli_carry_such_names(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    make = "touch bad$(printf '\\377').txt; printf 'caf\\351\\n' > latin.txt"
    main = [
        {"tool_calls": [{"name": "shell", "arguments": {"command": make}}]},
        {"tool_calls": [{"name": "list_files", "arguments": {}}]},
        {"tool_calls": [{"name": "grep", "arguments": {"pattern": "caf"}}]},
        {"text": "done"},
        # The resumed turn: the same names again, from a journal that holds them.
        {"tool_calls": [{"name": "list_files", "arguments": {}}]},
        {"text": "done again"},
    ]
    script.write_bytes(orjson.dumps({"agents": {"main": main}}))
    root = tmp_path / "sessions"
    first = _cli(root, "run", "g", "--model", f"scripted:{script}", "-w", str(workspace), "--yes")
    assert first.returncode == 0, first.stderr
    assert "bad\\xff.txt" in first.stdout  # the live view's plain lines
    [session] = [p.name for p in root.iterdir()]
    second = _cli(root, "resume", session, "--message", "list again", "--json")
    assert second.returncode == 0, second.stderr
    events = [orjson.loads(line) for line in second.stdout.splitlines()]
    listed = [e["result"]["content"] for e in events if e["kind"] == "tool_call_finished"]
    assert listed == [f"bad\\xff.txt\nlatin.txt\n{ESCAPED_NOTE}"]
    shown = _cli(root, "sessions", "show", session)
    assert shown.returncode == 0, shown.stderr
    verified = _cli(root, "sessions", "verify", session)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _cli(root: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "orchestrator", *arguments, "--sessions-dir", str(root)]
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


async def test_a_journal_cut_with_the_call_open_resumes(workspace: Path, tmp_path: Path) -> None:
    # The journal as a run that failed on such a name left it: the reply with its
    # `list_files` call, no result (cut there, as a kill would: the journal is the truth,
    # the snapshot a view). The resume runs the call again (it is idempotent), which
    # failed every time before.
    def main(request: ModelRequest) -> ScriptedReply:
        if request.step == 0:
            return reply("", c("list_files"))
        return reply("listed: " + results(request)[-1])

    sessions = tmp_path / "s"
    first = await orc.run(
        "g", model=ScriptedModel(main), workspace=workspace, sessions_dir=sessions, **TEAM
    )
    assert first.status == "completed", first.detail
    [directory] = sessions.iterdir()
    lines = (directory / "journal.jsonl").read_bytes().splitlines(keepends=True)
    [cut] = [n for n, line in enumerate(lines) if b'"name":"list_files"' in line]
    kept = b"".join(lines[: cut + 1])
    (directory / "journal.jsonl").write_bytes(kept)
    (directory / "snapshot.json").unlink()
    manifest = orjson.loads((directory / "session.json").read_bytes())
    manifest.update(journal_seq=orjson.loads(lines[cut])["seq"], journal_size=len(kept))
    (directory / "session.json").write_bytes(orjson.dumps(manifest))
    result = await orc.resume(directory, model=ScriptedModel(main), **TEAM)
    assert result.status == "completed", result.detail
    assert result.output == first.output
    assert result.output == f"listed: bad\\xff.txt\nd\\xfe/notes.txt\nimage.bin\n{ESCAPED_NOTE}"
