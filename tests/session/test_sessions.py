"""Sessions through the real CLI: recorded sessions, locks, bad ids, corruption, Ctrl+C."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import orjson
import pytest

from orchestrator import ToolResult, load_state
from orchestrator.session import verify
from orchestrator.session.live import JOURNAL, LOCK, SNAPSHOT, read_manifest
from orchestrator.session.replay import read_snapshot
from orchestrator.state.manifest import FORMAT_VERSION
from orchestrator.store import SessionLock, scan_journal
from orchestrator.tools.shell import marked
from tests.scenes import call, gone_soon, orchestrator, pasted

ROOT = Path(__file__).parents[2]
RECORDED = ROOT / "sessions"


def cli(*args: str, root: Path) -> subprocess.CompletedProcess[str]:
    # (Resumes pass --approve: the recordings since format 8 are the demo's, which plans
    # first and re-plans once; a plan is approved only by --approve or a person.)
    return orchestrator(*args, "--sessions-dir", str(root))


def only_session(root: Path) -> str:
    [directory] = [p for p in root.iterdir() if p.is_dir()]
    return directory.name


def copy_recorded(name: str, tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    shutil.copytree(RECORDED / name, root)
    return root


@pytest.fixture
def killed_copy(tmp_path: Path) -> Path:
    """A copy of the recorded session that SIGKILL cut off mid-turn."""
    return copy_recorded(f"v{FORMAT_VERSION}-killed-mid-turn", tmp_path)


def test_recorded_sessions_exist_for_every_format() -> None:
    assert sorted(p.name for p in RECORDED.iterdir() if p.is_dir()) == sorted(
        f"v{version}-{name}"
        for version in range(1, FORMAT_VERSION + 1)
        for name in ("completed", "killed-mid-turn")
    )  # (sorted as names: v10 before v2)


@pytest.mark.parametrize("version", range(1, FORMAT_VERSION + 1))
def test_recorded_finished_session_says_so(tmp_path: Path, version: int) -> None:
    root = copy_recorded(f"v{version}-completed", tmp_path)
    result = cli("resume", "--last", "--yes", "--approve", root=root)
    assert result.returncode == 0, result.stderr
    assert "already finished (completed)" in result.stdout


@pytest.mark.parametrize("version", range(1, FORMAT_VERSION + 1))
def test_recorded_killed_session_resumes_anywhere(tmp_path: Path, version: int) -> None:
    killed_copy = copy_recorded(f"v{version}-killed-mid-turn", tmp_path)
    session_id = only_session(killed_copy)
    directory = killed_copy / session_id
    if version == FORMAT_VERSION:
        before = load_state(directory, warn=lambda _: None)
        # cut off with a shell call in flight (a worker's, since format 3)
        assert any(a.pending_calls() for a in before.agents.values())
    result = cli("resume", session_id, "--yes", "--approve", root=killed_copy)
    assert result.returncode == 0, result.stderr
    state = load_state(directory, warn=lambda _: None)
    assert state.status == "completed"
    agents = list(state.agents.values())
    assert all(a.pending_calls() == [] for a in agents)
    # The shell calls in flight at the kill (one or two workers', as the race fell).
    interrupted = [
        m
        for a in agents
        for m in a.messages
        if isinstance(m, ToolResult) and m.status == "interrupted"
    ]
    assert interrupted
    for result in interrupted:
        assert result.name == "shell"
        assert "may or may not have taken effect" in result.content
    tasks = state.tasks.tasks.values()
    assert all(t.state == "completed" for t in tasks if t.kind == "agent")
    if version >= 9:
        # The builder's check in the background (a task of kind tool) was running at the
        # kill: it is reported interrupted, to the builder, once, and never run again.
        check = state.tasks.get("t5")
        assert check is not None
        assert (check.kind, check.state) == ("tool", "cancelled")  # the stop cut it: no failure
        assert check.reason.startswith("interrupted: ")
        told = [
            (fields["mail"], fields["to"])
            for fields in (r.fields() for r in scan_journal(directory / JOURNAL).records)
            if fields["k"] == "message_posted" and fields["a"] == "t5"
        ]
        assert told == [("risk_alert", "main")]
        heard = "\n".join(str(getattr(m, "content", "")) for m in state.agents["main"].messages)
        assert heard.count("background call t5 (shell: ") == 1
    check = subprocess.run(
        [sys.executable, "test_mathutil.py"],
        cwd=directory / "workspace",
        capture_output=True,
        check=False,
    )
    assert check.returncode == 0
    assert read_manifest(directory).status == "completed"


def test_second_resume_fails_naming_the_holder(killed_copy: Path) -> None:
    session_id = only_session(killed_copy)
    with SessionLock(killed_copy / session_id / LOCK):
        result = cli("resume", session_id, "--yes", "--approve", root=killed_copy)
    assert result.returncode == 1
    error = result.stderr.splitlines()[-1]
    assert error.startswith("error: ")
    assert str(os.getpid()) in error


def test_list_and_show(killed_copy: Path) -> None:
    session_id = only_session(killed_copy)
    listing = cli("sessions", "list", root=killed_copy)
    assert listing.returncode == 0
    assert session_id in listing.stdout
    assert "stopped (resumable)" in listing.stdout
    shown = cli("sessions", "show", session_id, "--json", root=killed_copy)
    info = orjson.loads(shown.stdout)
    assert info["id"] == session_id
    state = load_state(killed_copy / session_id, warn=pytest.fail)
    assert info["agents"]["main"]["model_calls"] == state.agents["main"].steps
    assert info["last_events"][-1]["seq"] == state.seq
    # The four workers, the builder's check in the background (format 9), and the text
    # worker's test in the background when it had started as the kill fell (since format
    # 14's checkpoints, a worker's first shell call, where the recording is cut, may come
    # before it).
    tasks = [t["task_id"] for t in info["tasks"]]
    assert tasks in (["t1", "t2", "t3", "t4", "t5"], ["t1", "t2", "t3", "t4", "t5", "t6"])
    # Every message posted (the live ones, and t6's end, which t2 has read).
    shown_mail = {m["message_id"] for m in info["mailbox"]}
    assert shown_mail == {f"m{n}" for n in range(1, state.mailbox.posted_count + 1)}
    assert set(state.mailbox.messages) <= shown_mail
    text = cli("sessions", "show", session_id, root=killed_copy)
    rows = text.stdout.splitlines()
    assert any(row.split()[:2] == ["main", "builder"] for row in rows)
    assert any(row.split()[:2] == ["planner", "planner"] for row in rows)
    # Killed while t1 ran: it is timed up to the journal's last record, not to now.
    [t1] = [row for row in rows if row.startswith("  ├─ t1 ")]
    state_, took = t1.split()[2:4]
    assert state_ == "running"
    assert float(took.removesuffix("s")) < 1  # (a scripted model is quick)
    assert "  worker: statistics module · module and test written" in t1


@pytest.mark.parametrize(
    ("session_id", "message"),
    [
        ("../etc", "is not a session id"),
        ("a/b", "is not a session id"),
        ("20261123T030617-ffffff", "no session '20261123T030617-ffffff'"),
    ],
)
def test_bad_and_unknown_ids(tmp_path: Path, session_id: str, message: str) -> None:
    result = cli("resume", session_id, root=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr


def test_resume_last_with_no_sessions(tmp_path: Path) -> None:
    result = cli("resume", "--last", root=tmp_path / "empty")
    assert result.returncode == 2
    assert "no sessions under" in result.stderr


def test_corrupt_manifest_is_named(killed_copy: Path) -> None:
    session_id = only_session(killed_copy)
    (killed_copy / session_id / "session.json").write_text("{not json")
    result = cli("resume", session_id, "--yes", "--approve", root=killed_copy)
    assert result.returncode == 1
    assert "session.json: not a valid session manifest" in result.stderr


def test_newer_format_is_refused(killed_copy: Path) -> None:
    session_id = only_session(killed_copy)
    path = killed_copy / session_id / "session.json"
    manifest = orjson.loads(path.read_bytes())
    path.write_bytes(orjson.dumps({**manifest, "format_version": 99}))
    result = cli("resume", session_id, "--yes", "--approve", root=killed_copy)
    assert result.returncode == 1
    assert "written by a newer orchestrator" in result.stderr


def test_corruption_mid_journal_then_repair(killed_copy: Path) -> None:
    session_id = only_session(killed_copy)
    journal = killed_copy / session_id / JOURNAL
    lines = journal.read_bytes().splitlines(keepends=True)
    lines[4] = re.sub(rb'"a":"([^"]+)"', rb'"a":"\1!"', lines[4])
    journal.write_bytes(b"".join(lines))
    refused = cli("resume", session_id, "--yes", "--approve", root=killed_copy)
    assert refused.returncode == 1
    assert "line 5" in refused.stderr
    assert "seq 5" in refused.stderr
    # The error names the exact commands that check and repair this session: run them.
    commands = {
        line.split(":", 1)[0]: line.split(":", 1)[1].split()
        for line in refused.stderr.splitlines()
        if line.startswith(("check it with:", "repair it with:"))
    }
    check = commands["check it with"]
    assert check[:3] == ["orchestrator", "sessions", "verify"]
    verified = subprocess.run(
        [sys.executable, "-m", *check], capture_output=True, text=True, check=False
    )
    assert verified.returncode == 1
    assert "line 5" in verified.stdout
    repair = commands["repair it with"]
    repaired = subprocess.run(
        [sys.executable, "-m", *repair], capture_output=True, text=True, check=False
    )
    assert repaired.returncode == 0, repaired.stderr
    assert list((killed_copy / session_id).glob("journal.jsonl.corrupt-*"))
    assert scan_journal(journal).last_seq == 4
    resumed = cli("resume", session_id, "--yes", "--approve", root=killed_copy)
    assert resumed.returncode == 0, resumed.stderr


def test_torn_last_line_is_cut_with_a_warning(killed_copy: Path) -> None:
    session_id = only_session(killed_copy)
    journal = killed_copy / session_id / JOURNAL
    last = scan_journal(journal).last_seq
    # A record cut off as it was written: past every record the manifest says is durable
    # (one it covers, cut short, is a loss, which a resume refuses).
    with journal.open("ab") as out:
        out.write(b'{"seq":%d,"t":1,"k":"turn_sta' % (last + 1))
    result = cli("resume", session_id, "--yes", "--approve", root=killed_copy)
    assert result.returncode == 0, result.stderr
    assert "cut a torn tail" in result.stdout  # a warning: a line for people
    assert f"seq {last + 1}" in result.stdout


def test_unreadable_snapshot_falls_back_to_the_journal(tmp_path: Path) -> None:
    root = copy_recorded(f"v{FORMAT_VERSION}-completed", tmp_path)
    directory = root / only_session(root)
    good = load_state(directory, warn=lambda _: None).describe()
    (directory / SNAPSHOT).write_text("{")
    warnings: list[str] = []
    assert load_state(directory, warn=warnings.append).describe() == good
    assert "ignored unreadable snapshot" in warnings[0]


def test_a_snapshot_of_an_older_layout_is_replaced_by_the_journal_quietly(
    tmp_path: Path,
) -> None:
    root = copy_recorded(f"v{FORMAT_VERSION}-completed", tmp_path)
    directory = root / only_session(root)
    good = load_state(directory, warn=pytest.fail).describe()
    older = msgspec.to_builtins(load_state(directory, warn=pytest.fail).snapshot())
    older.pop("layout")  # layout 1 had no mark, and every message whole in a list
    older["mailbox"] = older["mailbox"]["live"]
    (directory / SNAPSHOT).write_bytes(orjson.dumps(older))
    assert read_snapshot(directory, warn=pytest.fail) is None
    assert load_state(directory, warn=pytest.fail).describe() == good
    assert verify(directory) == []


def test_snapshot_small_state_is_trusted_and_contexts_come_from_the_journal(
    tmp_path: Path,
) -> None:
    root = copy_recorded(f"v{FORMAT_VERSION}-completed", tmp_path)
    directory = root / only_session(root)
    replayed = load_state(directory, warn=pytest.fail)  # before the change
    # (The recorded snapshot may be of an older layout, which is not read: write one.)
    snapshot = orjson.loads(replayed.snapshot_json())
    snapshot["agents"]["main"]["role"] = "from-snapshot"
    (directory / SNAPSHOT).write_bytes(orjson.dumps(snapshot))
    state = load_state(directory, warn=lambda _: None)
    assert state.agents["main"].role == "from-snapshot"
    assert state.seq == scan_journal(directory / JOURNAL).last_seq
    # The contexts are rebuilt from the journal, not taken from the snapshot.
    assert state.agents["main"].messages == replayed.agents["main"].messages
    assert len(state.agents["main"].messages) > 10
    assert "messages" not in snapshot["agents"]["main"]  # positions, not copies
    # Nor the verdicts of every turn: `show` reads them from the journal.
    assert all("history" not in progress for progress in snapshot["progress"].values())
    assert snapshot["agents"]["main"]["message_count"] == len(replayed.agents["main"].messages)


def slow_command(tmp_path: Path, command: str) -> tuple[Path, list[str]]:
    """`orchestrator run --json` on the sessions under tmp_path/sessions, its main agent's
    first call `shell COMMAND`: (the sessions root, the command line)."""
    script = tmp_path / "slow.json"
    replies = [{"tool_calls": [call("shell", command=command)]}, {"text": "finished"}]
    script.write_bytes(orjson.dumps({"agents": {"main": replies}}))
    root = tmp_path / "sessions"
    argv = [
        sys.executable, "-m", "orchestrator", "run", "slow", "--model", f"scripted:{script}",
        "--session-workspace", "--yes", "--json", "--sessions-dir", str(root),
    ]  # fmt: skip
    return root, argv


def slow_run(tmp_path: Path, command: str) -> tuple[Path, subprocess.Popen[bytes]]:
    """`slow_command` started: (the sessions root, the process)."""
    root, argv = slow_command(tmp_path, command)
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    return root, proc


def test_ctrl_c_stops_cleanly_and_resumes(tmp_path: Path) -> None:
    root, proc = slow_run(tmp_path, "sleep 30")
    assert proc.stdout is not None
    for line in proc.stdout:
        if orjson.loads(line)["kind"] == "tool_call_started":
            proc.send_signal(signal.SIGINT)
            break
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    session_id = only_session(root)
    # Under --json the lines for people are on stderr: the summary ends them.
    # The resume command repeats --yes, which the run was given and the session does not
    # journal: pasted unattended, it runs as the first run did.
    printed = f"orchestrator resume {session_id} --sessions-dir {root} --yes"
    people = stderr.decode().splitlines()
    assert people[-5] == f"session {session_id} interrupted (Ctrl+C)"
    assert people[-3] == f"  session    {root / session_id}"
    assert people[-1] == f"  next       continue it with: {printed}"
    directory = root / session_id
    assert read_manifest(directory).status == "interrupted"
    [result] = [
        m
        for m in load_state(directory, warn=lambda _: None).agents["main"].messages
        if isinstance(m, ToolResult)
    ]
    assert result.status == "cancelled"
    resumed = pasted(printed)
    assert resumed.returncode == 0, resumed.stderr
    assert read_manifest(directory).status == "completed"


def test_older_format_is_migrated_step_by_step(
    killed_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.errors import SessionError
    from orchestrator.session import migrations

    directory = killed_copy / only_session(killed_copy)
    path = directory / "session.json"
    path.write_bytes(orjson.dumps({**orjson.loads(path.read_bytes()), "format_version": 0}))
    with pytest.raises(SessionError, match="no migration from session format 0"):
        migrations.migrate(directory, read_manifest(directory))
    ran: list[Path] = []
    steps = {version: ran.append for version in range(FORMAT_VERSION)}
    monkeypatch.setattr(migrations, "MIGRATIONS", steps)
    migrated = migrations.migrate(directory, read_manifest(directory))
    assert ran == [directory] * FORMAT_VERSION
    assert migrated.format_version == FORMAT_VERSION
    assert read_manifest(directory).format_version == FORMAT_VERSION


def test_sigterm_stops_cleanly_and_kills_running_commands(tmp_path: Path) -> None:
    root, proc = slow_run(tmp_path, "echo $$ > pid.txt; sleep 30")
    assert proc.stdout is not None
    directory: Path | None = None
    for line in proc.stdout:
        if orjson.loads(line)["kind"] == "tool_call_started":
            directory = root / only_session(root)
            pid_file = directory / "workspace" / "pid.txt"
            # The shell writes its pid first thing; poll for it (bounded), never sleep.
            deadline = time.monotonic() + 10
            while not pid_file.exists() or not pid_file.read_text().strip():
                assert time.monotonic() < deadline, "the shell never started"
                os.sched_yield()
            started = marked(f"{directory.name}/")
            proc.send_signal(signal.SIGTERM)
            break
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert b" interrupted (terminated by a signal)\n" in stderr
    assert b"next       continue it with: orchestrator resume " in stderr
    assert directory is not None
    assert started  # the shell, its sleep (and the sandbox's own processes, if any)
    assert all(gone_soon(pid) for pid in started)
    assert read_manifest(directory).status == "interrupted"
    resumed = cli("resume", directory.name, "--yes", "--approve", root=root)
    assert resumed.returncode == 0, resumed.stderr


@pytest.mark.parametrize(
    "damage",
    ["emptied", "deleted", "cut_in_half", "front_cut", "snapshot_ahead_only"],
)
def test_a_session_that_made_progress_is_never_rerun_from_the_start(
    tmp_path: Path, damage: str
) -> None:
    root = copy_recorded(f"v{FORMAT_VERSION}-completed", tmp_path)
    session_id = only_session(root)
    directory = root / session_id
    manifest = orjson.loads((directory / "session.json").read_bytes())
    manifest["status"] = "interrupted"  # resumable, as after Ctrl+C
    manifest["journal_seq"] = scan_journal(directory / JOURNAL).last_seq
    (directory / "session.json").write_bytes(orjson.dumps(manifest))
    journal = directory / JOURNAL
    lines = journal.read_bytes().splitlines(keepends=True)
    match damage:
        case "emptied":
            journal.write_bytes(b"")
        case "deleted":
            journal.unlink()
        case "cut_in_half":
            journal.write_bytes(b"".join(lines[: len(lines) // 2]))
        case "front_cut":
            journal.write_bytes(b"".join(lines[3:]))
        case "snapshot_ahead_only":
            journal.write_bytes(b"".join(lines[:-2]))
            manifest["journal_seq"] = 0  # only the snapshot knows
            (directory / "session.json").write_bytes(orjson.dumps(manifest))
    before = snapshot_workspace(directory / "workspace")
    refused = cli("resume", session_id, "--yes", "--approve", root=root)
    assert refused.returncode == 1, refused.stderr
    assert "sessions verify" in refused.stderr
    assert "sessions repair" in refused.stderr
    assert snapshot_workspace(directory / "workspace") == before  # nothing ran again
    # The way out: repair says what it accepts, then the session resumes from what is left.
    repaired = cli("sessions", "repair", session_id, root=root)
    assert repaired.returncode == 0, repaired.stderr
    assert "done again" in repaired.stdout  # the loss it accepts is said
    again = cli("resume", session_id, "--yes", "--approve", root=root)
    assert again.returncode == 0, again.stderr


def snapshot_workspace(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def slow_shell_session(tmp_path: Path) -> tuple[Path, list[str]]:
    """`slow_command` whose shell writes its pid, sleeps, then writes late.txt."""
    return slow_command(tmp_path, "echo $$ > pid.txt; sleep 30; echo late > late.txt")


def start_until_shell_runs(
    command: list[str], root: Path
) -> tuple[subprocess.Popen[bytes], list[int]]:
    """The run, and the (host) pids of the processes its shell call started, found by
    the call's marker in their environment, as a resume finds them: a sandboxed command
    sees only its own PID namespace, so the pid it writes is not the host's."""
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if orjson.loads(line)["kind"] == "tool_call_started":
            session_id = only_session(root)
            pid_file = root / session_id / "workspace" / "pid.txt"
            deadline = time.monotonic() + 10
            while not pid_file.exists() or not pid_file.read_text().strip():
                assert time.monotonic() < deadline, "the shell never started"
                os.sched_yield()
            return proc, marked(f"{session_id}/")
    raise AssertionError("no shell call started")


def test_after_a_sigkill_what_the_interrupted_call_started_dies_with_it(
    tmp_path: Path,
) -> None:
    root, command = slow_shell_session(tmp_path)
    proc, started = start_until_shell_runs(command, root)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    try:
        # Not orphaned, sandboxed or not (PR_SET_PDEATHSIG, issue 37): it would go on
        # writing into the workspace. (Resume still kills whatever carries the call's
        # marker, where nothing ties a command to orchestrator.)
        assert started
        assert all(gone_soon(pid) for pid in started)
        session_id = only_session(root)
        resumed = cli("resume", session_id, "--yes", "--approve", root=root)
        assert resumed.returncode == 0, resumed.stderr
        workspace = root / session_id / "workspace"
        assert not (workspace / "late.txt").exists()
    finally:
        for pid in started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_sighup_stops_a_run_like_sigterm(tmp_path: Path) -> None:
    root, command = slow_shell_session(tmp_path)
    proc, started = start_until_shell_runs(command, root)
    proc.send_signal(signal.SIGHUP)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert b" interrupted (terminated by a signal)\n" in stderr
    assert b"next       continue it with: orchestrator resume " in stderr
    assert started
    assert all(gone_soon(pid) for pid in started)
    assert read_manifest(root / only_session(root)).status == "interrupted"


def test_list_json_and_delete(tmp_path: Path) -> None:
    root = copy_recorded(f"v{FORMAT_VERSION}-completed", tmp_path)
    shutil.copytree(RECORDED / f"v{FORMAT_VERSION}-killed-mid-turn", root, dirs_exist_ok=True)
    listed = cli("sessions", "list", "--json", root=root)
    assert listed.returncode == 0, listed.stderr
    entries = [orjson.loads(line) for line in listed.stdout.splitlines()]
    assert [e["status"] for e in entries] == ["stopped (resumable)", "completed"]
    assert all(e["size"] > 0 and e["goal"] for e in entries)
    killed = entries[0]["id"]
    with SessionLock(root / killed / LOCK):  # in use: refused, nothing deleted
        refused = cli("sessions", "delete", killed, root=root)
    assert refused.returncode == 1
    assert "in use by" in refused.stderr
    assert (root / killed).is_dir()
    deleted = cli("sessions", "delete", killed, root=root)
    assert deleted.returncode == 0, deleted.stderr
    assert not (root / killed).exists()
    unknown = cli("sessions", "delete", killed, root=root)
    assert unknown.returncode == 2
    assert "no session" in unknown.stderr


def test_json_events_carry_the_session_the_seq_and_the_time(tmp_path: Path) -> None:
    # The demo's script, run without its plan (the recordings' adds a check in the
    # background that waits for a file only the plan's last task writes).
    script = ROOT / "orchestrator" / "demo" / "script.json"
    root = tmp_path / "sessions"
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", "g", "--model",
         f"scripted:{script}", "--session-workspace", "--yes", "--json",
         "--sessions-dir", str(root)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    events = [orjson.loads(line) for line in result.stdout.splitlines()]
    session_id = only_session(root)
    assert {e["session"] for e in events} == {session_id}
    assert all("time" in e for e in events)
    journaled = [e for e in events if "seq" in e]
    assert [e["kind"] for e in journaled][:2] == ["agent_started", "session_status"]
    # Every record once, each with its own seq (lines of calls that ran at once may come
    # out of seq order), but the first: the settings, journaled as the session was made.
    scan = scan_journal(root / session_id / JOURNAL)
    assert scan.records[0].parsed().kind == "settings"
    seqs = sorted(e["seq"] for e in journaled)
    assert seqs == list(range(2, scan.last_seq + 1))
    assert not any("seq" in e for e in events if e["kind"] == "text")


@pytest.mark.parametrize(
    ("kind", "agent", "fields", "message"),
    [
        ("mystery", "main", {}, "does not match its schema"),  # a kind this version lacks
        ("call_result", "ghost", {"ref": "1.0"}, "no agent 'ghost'"),  # an unknown agent
        ("call_result", "main", {"ref": "999.0"}, "not an open call"),
        ("turn_ended", "main", {"reason": "tea break", "rounds": 1}, "does not match"),
    ],
)
def test_a_record_that_checksums_but_does_not_fit_is_named_and_repairable(
    killed_copy: Path, kind: str, agent: str, fields: dict[str, object], message: str
) -> None:
    from orchestrator.store._line import encode

    session_id = only_session(killed_copy)
    journal = killed_copy / session_id / JOURNAL
    last = scan_journal(journal).last_seq
    with journal.open("ab") as file:
        file.write(encode(last + 1, 0, kind, agent, fields, end=True))
    refused = cli("resume", session_id, "--yes", "--approve", root=killed_copy)
    assert refused.returncode == 1
    assert message in refused.stderr
    assert f"seq {last + 1}" in refused.stderr
    assert "orchestrator sessions repair" in refused.stderr
    repaired = cli("sessions", "repair", session_id, root=killed_copy)
    assert repaired.returncode == 0, repaired.stderr
    assert "does not fit this version" in repaired.stdout
    assert scan_journal(journal).last_seq == last
    resumed = cli("resume", session_id, "--yes", "--approve", root=killed_copy)
    assert resumed.returncode == 0, resumed.stderr


def test_show_transcript_prints_every_call_and_result_in_full(tmp_path: Path) -> None:
    root = copy_recorded(f"v{FORMAT_VERSION}-completed", tmp_path)
    session_id = only_session(root)
    shown = cli("sessions", "show", session_id, "--transcript", root=root)
    assert shown.returncode == 0, shown.stderr
    state = load_state(root / session_id, warn=pytest.fail)
    for message in [m for a in state.agents.values() for m in a.messages]:
        if isinstance(message, ToolResult):
            assert message.content.strip().splitlines()[-1] in shown.stdout
        elif message.role == "assistant":
            for call in message.tool_calls:  # type: ignore[union-attr]
                assert call.arguments in shown.stdout  # whole, not abbreviated
    # The live contexts: the main agent's starts at its checkpoint (docs/compaction.md).
    replies = sum(m.role == "assistant" for a in state.agents.values() for m in a.messages)
    assert shown.stdout.count("[assistant]") == replies
