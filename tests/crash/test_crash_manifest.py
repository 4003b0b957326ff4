"""The manifest never disagrees with the journal for good (issue 19, item 7), and a full
disk is one clear line (item 8).

A real SIGKILL between the journal's last record and the manifest's rewrite (a kill
point of `fault_child.py`) leaves `session.json` behind the journal; then `sessions
list`, `sessions show` and `resume` agree with the journal, the first command that can
take the session's lock writes the manifest up to it, and the temporary files the
killed writes left are gone. A disk that fills (a fault-injecting writer, and a real
small tmpfs where this machine lets us mount one) ends the run with one line and exit
5; the session then resumes and completes, and nothing acknowledged is lost.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator.cli.parser import EXIT_FAILED, EXIT_STORAGE
from orchestrator.layout import JOURNAL, MANIFEST
from orchestrator.store import scan_journal
from tests.crash.harness import crash_script
from tests.scenes import orchestrator as command

ROOT = Path(__file__).parents[2]
TIMEOUT = 120  # a generous bound on each process; never what is asserted


def run(*args: str, root: Path, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    """The command line on the sessions under `root`, with `fault` (fault_child.py)."""
    if fault is None:
        return command(*args, "--sessions-dir", str(root), cwd=ROOT, timeout=TIMEOUT)
    module = "tests.crash.fault_child"
    return command(fault, str(root), *args, module=module, cwd=ROOT, timeout=TIMEOUT)


def start(tmp_path: Path, steps: int, *extra: str, root: Path, fault: str | None = None) -> Any:
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(crash_script(steps)))
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    args = ("run", "crash", "--model", f"scripted:{script}", "-w", str(workspace), "--yes")
    return run(*args, "--json", *extra, root=root, fault=fault)


def only_session(root: Path) -> Path:
    [directory] = [p for p in root.iterdir() if p.is_dir() and (p / MANIFEST).exists()]
    return directory


def manifest(directory: Path) -> dict[str, Any]:
    fields: dict[str, Any] = orjson.loads((directory / MANIFEST).read_bytes())
    return fields


def journal_status(directory: Path) -> str:
    statuses = [
        f.fields()["status"]
        for f in scan_journal(directory / JOURNAL).records
        if f.parsed().kind == "session_status"
    ]
    return statuses[-1]


def temporary_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob(".*.tmp") if "workspace" not in p.parts)


def listed_status(root: Path, session_id: str) -> str:
    listed = run("sessions", "list", "--json", root=root)
    assert listed.returncode == 0, listed.stderr
    [entry] = [orjson.loads(line) for line in listed.stdout.splitlines()]
    assert entry["id"] == session_id
    status: str = entry["status"]
    return status


# --- item 7: a kill between the journal's record and the manifest's rewrite ---------------


@pytest.mark.parametrize(
    ("steps", "extra", "status"),
    [(6, (), "completed"), (12, ("--max-rounds", "4"), "failed")],
    ids=["completed", "failed"],
)
def test_a_kill_before_the_manifest_is_rewritten_is_read_through(
    tmp_path: Path, steps: int, extra: tuple[str, ...], status: str
) -> None:
    root = tmp_path / "sessions"
    killed = start(tmp_path, steps, *extra, root=root, fault=f"kill-before:{MANIFEST}:{status}")
    assert killed.returncode == -9, killed.stderr  # SIGKILLed at the kill point
    directory = only_session(root)
    session_id = directory.name
    # The journal has the final status; the manifest (and a temporary file) lag behind.
    assert journal_status(directory) == status
    assert manifest(directory)["status"] == "running"
    left = temporary_files(directory)
    assert left
    assert all(name.startswith(f".{MANIFEST}.") for name in left)

    # `sessions list` says the journal's status, and (the lock being free) catches up.
    assert listed_status(root, session_id) == status
    fields = manifest(directory)
    last = scan_journal(directory / JOURNAL)
    assert (fields["status"], fields["journal_seq"], fields["journal_size"]) == (
        status,
        last.last_seq,
        last.end_offset,
    )
    assert temporary_files(directory) == []
    # Caught up, the manifest is read as it is: a second list replaces nothing.
    inode = (directory / MANIFEST).stat().st_ino
    assert listed_status(root, session_id) == status
    assert (directory / MANIFEST).stat().st_ino == inode
    shown = run("sessions", "show", session_id, "--json", root=root)
    assert shown.returncode == 0, shown.stderr
    assert orjson.loads(shown.stdout)["status"] == status
    if status == "completed":
        resumed = run("resume", session_id, "--yes", root=root)
        assert resumed.returncode == 0, resumed.stderr
        assert "already finished (completed)" in resumed.stdout
    else:
        # Not finished: a resume runs it (to the same budget) and the three still agree.
        resumed = run("resume", session_id, "--yes", "--max-rounds", "4", root=root)
        assert resumed.returncode == EXIT_FAILED, resumed.stderr
        assert listed_status(root, session_id) == journal_status(directory) == status


def test_show_reads_through_a_manifest_left_behind_and_catches_it_up(tmp_path: Path) -> None:
    """The same kill, but `show` is the first to look: it says the journal's status,
    and, the lock being free, writes it back."""
    root = tmp_path / "sessions"
    killed = start(tmp_path, 5, root=root, fault=f"kill-before:{MANIFEST}:completed")
    assert killed.returncode == -9, killed.stderr
    directory = only_session(root)
    shown = run("sessions", "show", directory.name, root=root)
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"^status\s+completed$", shown.stdout, re.MULTILINE), shown.stdout
    assert manifest(directory)["status"] == "completed"  # show could take the lock


def test_a_kill_mid_snapshot_leaves_no_temporary_file_behind(tmp_path: Path) -> None:
    """The closing snapshot killed after its temporary file was written, before the
    rename: the manifest is current, and the stray file is removed by the next command
    that can take the lock (`sessions list`)."""
    root = tmp_path / "sessions"
    killed = start(tmp_path, 4, root=root, fault="kill-before:snapshot.json:*")
    assert killed.returncode == -9, killed.stderr
    directory = only_session(root)
    assert manifest(directory)["status"] == "completed"
    assert [name.startswith(".snapshot.json.") for name in temporary_files(directory)] == [True]
    assert listed_status(root, directory.name) == "completed"
    assert temporary_files(directory) == []
    assert run("sessions", "verify", directory.name, root=root).returncode == 0


def test_a_live_session_is_read_never_written(tmp_path: Path) -> None:
    """While another process holds the session's lock, `sessions list` reports the
    journal's status and leaves the manifest alone."""
    from orchestrator.store import SessionLock

    root = tmp_path / "sessions"
    start(tmp_path, 4, root=root, fault=f"kill-before:{MANIFEST}:completed")
    directory = only_session(root)
    before = (directory / MANIFEST).read_bytes()
    with SessionLock(directory / "lock"):
        assert listed_status(root, directory.name) == "completed"
        assert (directory / MANIFEST).read_bytes() == before
        assert temporary_files(directory)  # not this command's to remove


# --- item 8: a full disk ---------------------------------------------------------------


def durable_starts(stdout: str) -> set[str]:
    """The refs of the side effects whose start the run acknowledged (printed after the
    journal made it durable)."""
    events = [orjson.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return {e["ref"] for e in events if e["kind"] == "tool_call_started" and not e["idempotent"]}


def check_one_line_then_resume(root: Path, failed: subprocess.CompletedProcess[str]) -> str:
    """The run said the disk refused a write in one line, with exit 5, and kept its
    acknowledged records; once there is room, it resumes, completes and verifies."""
    assert failed.returncode == EXIT_STORAGE, failed.stderr
    directory = only_session(root)
    session_id = directory.name
    # (The sandbox's protection is said where the machine has one: docs/security.md.)
    lines = [line for line in failed.stderr.splitlines() if not line.startswith("note: shell")]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, failed.stderr
    assert len(lines) <= 2, failed.stderr  # "session ID (in ROOT)" and the error
    [line] = errors
    assert "No space left on device" in line
    assert str(directory) in line  # where
    assert re.search(r"kept every record up to seq \d+", line)  # what was kept
    assert line.endswith(f"then run: orchestrator resume {session_id} --sessions-dir {root} --yes")
    assert "Traceback" not in failed.stderr
    acknowledged = durable_starts(failed.stdout)
    # Stopped (resumable), by the journal's own status, whatever the manifest says.
    assert listed_status(root, session_id) == "stopped (resumable)"

    resumed = run("resume", session_id, "--yes", "--max-rounds", "500", root=root)
    assert resumed.returncode == 0, resumed.stderr
    started = {
        f.fields()["ref"]
        for f in scan_journal(directory / JOURNAL).records
        if f.parsed().kind == "call_started"
    }
    assert acknowledged <= started, "an acknowledged start was lost"
    assert run("sessions", "verify", session_id, root=root).returncode == 0
    assert listed_status(root, session_id) == "completed"
    assert manifest(directory)["status"] == "completed"
    effects = (directory.parent.parent / "ws" / "effects.log").read_text().splitlines()
    assert len(effects) == len(set(effects)), "a side effect ran twice"
    return line


@pytest.mark.parametrize("journal_bytes", [9_000, 21_000])
def test_a_disk_that_fills_mid_batch_in_the_journal(tmp_path: Path, journal_bytes: int) -> None:
    root = tmp_path / "sessions"
    failed = start(tmp_path, 40, root=root, fault=f"full-after-journal:{journal_bytes}")
    line = check_one_line_then_resume(root, failed)
    assert f"{JOURNAL}" in line


def test_a_disk_that_fills_at_the_manifest(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    failed = start(tmp_path, 12, root=root, fault="full-at-manifest:3")
    line = check_one_line_then_resume(root, failed)
    assert f"{MANIFEST}" in line


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_a_real_full_tmpfs(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "sessions", "64k") as root:
        filler = root / "filler"
        filler.write_bytes(b"x" * 24 * 1024)  # leaves 40 KB, less than the run needs
        failed = start(tmp_path, 80, root=root)
        assert failed.returncode == EXIT_STORAGE, failed.stderr
        filler.unlink()
        subprocess.run(["mount", "-o", "remount,size=1m", str(root)], check=True)
        check_one_line_then_resume(root, failed)
