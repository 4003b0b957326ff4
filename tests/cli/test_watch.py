"""`orchestrator sessions watch` (issue 24, item 3): a run in another process followed
from its journal, its lines shown before the run has finished and its end after; a
finished session replayed, its transcript the run's own, its JSON lines `run --json`'s;
Ctrl+C stops the watching and not the session; a session whose process is gone ends as
stopped; an unknown id and a corrupt journal as the other commands say them. A watch
never takes the lock (the run it follows holds it, and so does this test while it
watches a finished session) and never writes in the session's directory.

The run waits on a FIFO in its workspace (its shell call `cat`s it) until the test
writes to it: it is slow exactly as long as the test needs, with no sleep anywhere."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import orjson
import pyte
import pytest

from orchestrator.layout import FORMAT_VERSION, JOURNAL, LOCK
from orchestrator.store import SessionLock
from tests.cli.test_live_terminal import COLS, ROWS, run_on_screen
from tests.scenes import orchestrator as command

ROOT = Path(__file__).parents[2]
HELLO = f"scripted:{ROOT / 'examples' / 'hello-script.json'}"
RECORDED = ROOT / "sessions"
DEADLINE = 90  # seconds: a bound on a broken test, never a wait


def orchestrator_process(*args: str, sessions: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "NO_COLOR": "1", "ORCHESTRATOR_SESSIONS_DIR": str(sessions)}
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def orchestrator(*args: str, sessions: Path) -> subprocess.CompletedProcess[str]:
    return command(*args, timeout=DEADLINE, ORCHESTRATOR_SESSIONS_DIR=str(sessions))


def run_transcript(out: str, session_id: str) -> str:
    """A run's stdout without its lines for people: the session line first, and the
    summary from `session ID STATUS` on."""
    lines = out.splitlines(keepends=True)
    assert lines[0].startswith(f"session {session_id} (in "), lines[0]
    end = next(n for n, line in enumerate(lines) if n and line.startswith(f"session {session_id} "))
    return "".join(lines[1:end])


def watch_transcript(out: str, session_id: str) -> tuple[str, list[str]]:
    """A watch's stdout as its transcript and its lines for people (the first, saying
    what it watches, and the last, how the session ended)."""
    lines = out.splitlines(keepends=True)
    assert lines[0].startswith(f"watching session {session_id} "), lines[0]
    return "".join(lines[1:-1]), [lines[0].rstrip("\n"), lines[-1].rstrip("\n")]


class Lines:
    """A process's output, read line by line as it comes."""

    def __init__(self, stream: IO[bytes] | None) -> None:
        assert stream is not None
        self.fd = stream.fileno()
        self.buffer = b""
        self.lines: list[str] = []

    def until(self, pattern: str) -> re.Match[str]:
        """Read until a line matches `pattern` (failing the test at the deadline)."""
        deadline = time.monotonic() + DEADLINE
        while True:
            for line in self.lines:
                found = re.search(pattern, line)
                if found:
                    return found
            ready, _, _ = select.select([self.fd], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                pytest.fail(f"no line matching {pattern!r} in {self.lines}")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                pytest.fail(f"the output ended with no line matching {pattern!r}: {self.lines}")
            *whole, self.buffer = (self.buffer + chunk).split(b"\n")
            self.lines += [line.decode() for line in whole]


@contextmanager
def waiting_run(
    tmp_path: Path,
) -> Iterator[tuple[subprocess.Popen[bytes], str, Path, Lines]]:
    """A run whose main agent says a line, then `cat`s the FIFO `go` in its workspace
    (the run waits there until the test writes to it), then finishes: the process, its
    session id, the FIFO, and what was read of its stdout so far."""
    ws = tmp_path / "ws"
    ws.mkdir()
    fifo = ws / "go"
    os.mkfifo(fifo)
    call = {"name": "shell", "arguments": {"command": "cat go"}}
    script = {"agents": {"main": [{"text": "Waiting for the go.", "tool_calls": [call]},
                                  {"text": "Done."}]}}  # fmt: skip
    (tmp_path / "script.json").write_bytes(orjson.dumps(script))
    args = ["run", "wait for the go", "--model", f"scripted:{tmp_path / 'script.json'}"]
    run = orchestrator_process(
        *args, "-w", str(ws), "--yes", "--sandbox", "off", sessions=tmp_path / "s"
    )
    try:
        seen = Lines(run.stdout)
        session_id = seen.until(r"^session (\S+) \(in ")[1]
        yield run, session_id, fifo, seen
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()


def go(fifo: Path) -> None:
    """Let the run's `cat go` finish (opening the FIFO waits for its reader)."""
    with open(fifo, "wb") as writer:
        writer.write(b"go\n")


def test_a_run_in_another_process_is_followed_to_its_end(tmp_path: Path) -> None:
    with waiting_run(tmp_path) as (run, session_id, fifo, seen):
        watch = orchestrator_process(
            "sessions", "watch", session_id, "--plain", sessions=tmp_path / "s"
        )
        try:
            shown = Lines(watch.stdout)
            shown.until(r"→ shell command='cat go'")  # the run waits on the FIFO now
            assert shown.lines[1:3] == ["● main (main)", "Waiting for the go."]
            assert watch.poll() is None  # still watching
            go(fifo)
            out, err = watch.communicate(timeout=DEADLINE)
        finally:
            if watch.poll() is None:
                watch.kill()
                watch.communicate()
        run_out, run_err = run.communicate(timeout=DEADLINE)
    assert run.returncode == 0, run_err.decode()
    assert watch.returncode == 0, err.decode()
    whole = "\n".join(shown.lines) + "\n" + shown.buffer.decode() + out.decode()
    followed, said = watch_transcript(whole, session_id)
    # The run's own transcript, line for line.
    ran = "\n".join(seen.lines) + "\n" + seen.buffer.decode() + run_out.decode()
    assert followed == run_transcript(ran, session_id)
    assert followed.endswith("    ✓ shell: exit code 0 go\nDone.\n✔ main turn completed after "
                             "2 rounds\n✔ main done\n")  # fmt: skip
    assert said == [
        f"watching session {session_id} (running: followed); Ctrl+C stops watching",
        f"session {session_id} completed",
    ]
    assert err.decode() == ""
    verified = orchestrator("sessions", "verify", session_id, sessions=tmp_path / "s")
    assert verified.returncode == 0, verified.stdout  # the run it watched is whole


def test_ctrl_c_stops_the_watching_and_not_the_session(tmp_path: Path) -> None:
    with waiting_run(tmp_path) as (run, session_id, fifo, _):
        watch = orchestrator_process("sessions", "watch", "--last", sessions=tmp_path / "s")
        try:
            Lines(watch.stdout).until(r"→ shell")
            watch.send_signal(signal.SIGINT)
            out, _ = watch.communicate(timeout=DEADLINE)
        finally:
            if watch.poll() is None:
                watch.kill()
                watch.communicate()
        assert watch.returncode == 0
        assert out.decode().splitlines()[-1] == (
            f"stopped watching; session {session_id} goes on (watch it again: orchestrator "
            f"sessions watch {session_id})"
        )
        assert run.poll() is None  # the session goes on
        go(fifo)
        _, run_err = run.communicate(timeout=DEADLINE)
    assert run.returncode == 0, run_err.decode()


@pytest.fixture
def finished(tmp_path: Path) -> tuple[Path, str, str]:
    """A session the hello script ran to its end: its sessions root, id and transcript."""
    ws = tmp_path / "ws"
    ws.mkdir()
    run = orchestrator("run", "say hello", "--model", HELLO, "-w", str(ws), "--yes",
                       "--sandbox", "off", sessions=tmp_path / "s")  # fmt: skip
    assert run.returncode == 0, run.stderr
    session_id = re.findall(r"^session (\S+) \(in ", run.stdout, re.M)[0]
    return tmp_path / "s", session_id, run_transcript(run.stdout, session_id)


def contents(directory: Path) -> dict[str, tuple[str, int]]:
    return {
        str(path.relative_to(directory)): (
            hashlib.sha256(path.read_bytes()).hexdigest(),
            path.stat().st_mtime_ns,
        )
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def test_a_finished_session_replayed_at_once_is_the_runs_transcript_and_nothing_changes(
    finished: tuple[Path, str, str],
) -> None:
    root, session_id, transcript = finished
    directory = root / session_id
    with SessionLock(directory / LOCK):  # held by another process: a watch still works
        before = contents(directory)
        watched = orchestrator("sessions", "watch", session_id, "--instant", sessions=root)
        after = contents(directory)
    assert watched.returncode == 0, watched.stderr
    replayed, said = watch_transcript(watched.stdout, session_id)
    assert replayed == transcript
    assert said == [
        f"watching session {session_id} (replayed); Ctrl+C stops watching",
        f"session {session_id} completed",
    ]
    assert after == before  # nothing written, nothing touched


def test_json_lines_are_run_json_lines_with_the_times_the_records_were_written(
    tmp_path: Path, finished: tuple[Path, str, str]
) -> None:
    root, session_id, _ = finished
    watched = orchestrator("sessions", "watch", session_id, "--json", "--speed", "1000",
                           sessions=root)  # fmt: skip
    assert watched.returncode == 0, watched.stderr
    lines = [orjson.loads(line) for line in watched.stdout.splitlines()]
    assert {line["session"] for line in lines} == {session_id}
    seqs = [line["seq"] for line in lines if "seq" in line]
    assert seqs == list(range(1, len(seqs) + 1))  # every record, in order, told once
    assert lines[-1]["kind"] == "session_status"
    assert lines[-1]["status"] == "completed"
    # The same events a run prints with --json, but for those the journal does not keep
    # (usage, text in pieces) and the settings (journaled as the session was made, before
    # the run): field for field, but `time` and a call's `read_only`.
    ws = tmp_path / "ws2"
    ws.mkdir()
    run = orchestrator("run", "say hello", "--model", HELLO, "-w", str(ws), "--yes",
                       "--sandbox", "off", "--json", sessions=root)  # fmt: skip
    ran = [orjson.loads(line) for line in run.stdout.splitlines()]

    def journaled(events: list[dict[str, object]]) -> list[dict[str, object]]:
        drop = {"time", "session", "seq", "read_only"}
        return [
            {k: v for k, v in event.items() if k not in drop}
            for event in events
            if event["kind"] not in ("usage", "text", "settings")
        ]

    assert journaled(lines) == journaled(ran)


def test_a_session_whose_process_is_gone_is_replayed_and_ends_as_stopped(
    tmp_path: Path,
) -> None:
    [recorded] = (RECORDED / f"v{FORMAT_VERSION}-killed-mid-turn").iterdir()
    shutil.copytree(recorded, tmp_path / recorded.name)
    watched = orchestrator("sessions", "watch", "--last", "--instant", sessions=tmp_path)
    assert watched.returncode == 0, watched.stderr
    assert "→ " in watched.stdout
    assert watched.stdout.splitlines()[-1] == (
        f"session {recorded.name} stopped: its process is gone (continue it with: "
        f"orchestrator resume {recorded.name})"
    )


def test_an_unknown_id_and_a_corrupt_journal_are_said_as_sessions_show_says_them(
    finished: tuple[Path, str, str],
) -> None:
    root, session_id, _ = finished
    for target in ("20990101T000000-abcdef", "not an id"):
        shown = orchestrator("sessions", "show", target, sessions=root)
        watched = orchestrator("sessions", "watch", target, sessions=root)
        assert (watched.returncode, watched.stderr) == (shown.returncode, shown.stderr)
        assert watched.returncode == 2
    journal = root / session_id / JOURNAL
    lines = journal.read_bytes().split(b"\n")
    lines[5] = lines[5].replace(b"hello", b"HELLO", 1)
    journal.write_bytes(b"\n".join(lines))
    shown = orchestrator("sessions", "show", session_id, sessions=root)
    watched = orchestrator("sessions", "watch", session_id, sessions=root)
    assert watched.returncode == shown.returncode == 1
    assert "line 6 (seq 6) fails its checksum" in shown.stderr
    assert watched.stderr == shown.stderr
    assert watched.stdout.splitlines() == [
        f"watching session {session_id} (replayed at 10x); Ctrl+C stops watching"
    ]


def test_at_a_terminal_the_replay_ends_on_the_live_views_last_frame(
    finished: tuple[Path, str, str],
) -> None:
    root, session_id, _ = finished
    shown = run_on_screen(["sessions", "watch", session_id, "--sessions-dir", str(root)])
    assert shown.code == 0, shown.text()
    lines = shown.screen
    [main] = [line for line in lines if line.startswith("✓ main main")]
    assert "done" in main
    assert "write_file" in shown.text()  # the transcript above the frame
    [status] = [line for line in lines if line.startswith("1 done · ")]
    assert lines.index(status) > lines.index(main)
    assert lines[lines.index(status) + 1] == f"session {session_id} completed"


def test_at_a_terminal_a_running_session_is_drawn_running_then_done(tmp_path: Path) -> None:
    with waiting_run(tmp_path) as (run, session_id, fifo, _):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "ORCHESTRATOR_PLAIN")}
        watch = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", "sessions", "watch", session_id],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env, "TERM": "xterm-256color", "ORCHESTRATOR_SESSIONS_DIR": str(tmp_path / "s")},
        )
        os.close(slave)
        screen = pyte.Screen(COLS, ROWS)
        stream = pyte.ByteStream(screen)

        def shown_until(text: str) -> list[str]:
            deadline = time.monotonic() + DEADLINE
            while time.monotonic() < deadline:
                lines = [line.rstrip() for line in screen.display]
                if any(text in line for line in lines):
                    return lines
                ready, _, _ = select.select([master], [], [], 1.0)
                if ready:
                    with contextlib.suppress(OSError):  # EIO: the watch has ended
                        stream.feed(os.read(master, 65536))
            pytest.fail(f"never on the screen: {text!r}\n" + "\n".join(screen.display))

        try:
            running = shown_until("1 running · ")
            [main] = [line for line in running if line.startswith("● main main  running")]
            assert main.endswith('shell {"command":"cat go"}')
            go(fifo)
            done = shown_until(f"session {session_id} completed")
            assert watch.wait(timeout=DEADLINE) == 0
        finally:
            os.close(master)
            if watch.poll() is None:
                watch.kill()
                watch.wait()
        run.communicate(timeout=DEADLINE)
    assert run.returncode == 0
    [status] = [line for line in done if line.startswith("1 done · ")]
    assert done[done.index(status) - 2].startswith("✓ main main  done")
