"""Deferred approvals at the command line: `sessions show` lists the calls a program
parked (id, who, tool, command), `--json` outputs carry them and the main agent's answer,
and `resume --approve-call ID` / `--deny-call ID --reason TEXT` decide them. A process
SIGKILLed right after the decision is journaled, before the call runs, resumes and runs
the call once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

import orchestrator as orc
from tests.scenes import orchestrator


def parked(tmp_path: Path) -> tuple[Path, str, str]:
    """A session whose main agent's shell call (appending to log.txt) was answered
    `Later`: (sessions root, session id, the call's id). Its model is a script file, so
    the command line can resume it."""
    calls = [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo ran >> log.txt"}}]},
        {"text": "logged"},
    ]
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps({"agents": {"main": calls}}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    root = tmp_path / "s"
    result = orc.run_sync(
        "log it",
        model=f"scripted:{script}",
        workspace=workspace,
        sessions_dir=root,
        approve=lambda request: orc.Later(),
        tools=orc.workspace_tools(),  # (the command line's resume has them too)
    )
    assert result.status == "blocked"
    [request] = result.approvals
    return root, result.session_id, request.id


def test_sessions_show_lists_the_parked_call_and_resume_approves_it(tmp_path: Path) -> None:
    root, session, call = parked(tmp_path)
    shown = orchestrator("sessions", "show", session, "--sessions-dir", str(root))
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "calls waiting for approval" in text
    [row] = [line.split() for line in text.splitlines() if line.startswith(f"  {call} ")]
    assert row == [call, "the", "main", "agent", "shell", "echo", "ran", ">>", "log.txt"]
    # The command that decides it finds the session where this one did.
    assert f"orchestrator resume {session} --sessions-dir {root} --approve-call {call}" in text
    data = orjson.loads(
        orchestrator("sessions", "show", session, "--json", "--sessions-dir", str(root)).stdout
    )
    assert data["approvals"] == [
        {
            "id": call,
            "agent": "main",
            "who": "the main agent",
            "tool": "shell",
            "command": "echo ran >> log.txt",
            "arguments": '{"command":"echo ran >> log.txt"}',
        }
    ]
    assert orc.session_report(root, session).approvals[0].id == call

    done = orchestrator("resume", session, "--approve-call", call, "--sessions-dir", str(root))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ws" / "log.txt").read_text() == "ran\n"
    listed = orchestrator("sessions", "list", "--json", "--sessions-dir", str(root))
    [entry] = [orjson.loads(line) for line in listed.stdout.splitlines()]
    assert (entry["status"], entry["output"]) == ("completed", "logged")
    report = orjson.loads(
        orchestrator("sessions", "show", session, "--json", "--sessions-dir", str(root)).stdout
    )
    assert (report["output"], report["approvals"]) == ("logged", [])
    assert orc.list_sessions(root)[0].output == "logged"
    assert orc.session_report(root, session).output == "logged"


def test_deny_call_gives_the_model_the_reason_and_an_unknown_id_is_refused(
    tmp_path: Path,
) -> None:
    root, session, call = parked(tmp_path)
    unknown = orchestrator(
        "resume", session, "--approve-call", "main:77.0", "--sessions-dir", str(root)
    )
    assert unknown.returncode != 0
    assert "no parked call 'main:77.0'" in unknown.stderr
    assert call in unknown.stderr  # the ones there are
    denied = orchestrator(
        "resume", session, "--deny-call", call, "--reason", "not today", "--sessions-dir", str(root)
    )
    assert denied.returncode == 0, denied.stderr
    assert not (tmp_path / "ws" / "log.txt").exists()
    state = orc.load_state(root / session, warn=print)
    [result] = [m for m in state.agents["main"].messages if isinstance(m, orc.ToolResult)]
    assert result.content == "shell was not approved: not today; do not retry it"


KILL_AT_DECISION = """
import os, signal, sys, trio, orchestrator as orc

def kill(event):
    if event.kind == "approval_decided":  # journaled (durably) before the sink hears it
        os.kill(os.getpid(), signal.SIGKILL)

trio.run(lambda: orc.resume(sys.argv[1], approvals={sys.argv[2]: True}, on_event=kill,
                            tools=orc.workspace_tools()))
"""


def test_a_sigkill_between_the_decision_and_the_call_runs_the_call_once(tmp_path: Path) -> None:
    root, session, call = parked(tmp_path)
    argv = [sys.executable, "-c", KILL_AT_DECISION, str(root / session), call]
    killed = subprocess.run(argv, check=False, timeout=120)
    assert killed.returncode == -9
    journal = (root / session / "journal.jsonl").read_bytes()
    kinds = [orjson.loads(line)["k"] for line in journal.splitlines()]
    assert kinds[-1] == "approval_decided"  # the decision, and nothing of the call's run
    assert not (tmp_path / "ws" / "log.txt").exists()
    # The person's decision stands: a resume with no flags (nobody to ask, no --yes) runs it.
    done = orchestrator("resume", session, "--json", "--sessions-dir", str(root))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ws" / "log.txt").read_text() == "ran\n"
    journal = (root / session / "journal.jsonl").read_bytes()
    results = [r for r in map(orjson.loads, journal.splitlines()) if r["k"] == "call_result"]
    assert [r.get("status", "ok") for r in results] == ["ok"]
