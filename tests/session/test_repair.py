"""`sessions repair` says what resuming after its cut will do again (issue 19, item 12):
the cut calls run again, and those whose tools change things are listed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

from orchestrator.layout import JOURNAL, MANIFEST
from orchestrator.store import scan_journal
from tests.crash.harness import crash_script


def cli(*args: str, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args, "--sessions-dir", str(root)],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


def finished_session(tmp_path: Path, steps: int) -> tuple[Path, Path]:
    """A session of the crash script run to the end: (sessions root, its directory)."""
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(crash_script(steps)))
    (tmp_path / "ws").mkdir()
    root = tmp_path / "sessions"
    ran = cli(
        "run", "repair", "--model", f"scripted:{script}", "-w", str(tmp_path / "ws"), "--yes",
        root=root,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    [directory] = [p for p in root.iterdir() if p.is_dir()]
    return root, directory


def corrupt_reply(directory: Path, text: str) -> int:
    """Flip a byte in the record of the reply that says `text`; its seq."""
    journal = directory / JOURNAL
    lines = journal.read_bytes().splitlines(keepends=True)
    [seq] = [
        f.seq
        for f in scan_journal(journal).records
        if f.parsed().kind == "assistant_replied" and f.fields()["message"]["text"] == text
    ]
    lines[seq - 1] = lines[seq - 1].replace(text.encode(), text.upper().encode())
    journal.write_bytes(b"".join(lines))
    return seq


def test_repair_lists_the_cut_calls_that_change_things(tmp_path: Path) -> None:
    root, directory = finished_session(tmp_path, 4)
    cut_at = corrupt_reply(directory, "Step 1.")
    repaired = cli("sessions", "repair", directory.name, root=root)
    assert repaired.returncode == 0, repaired.stderr
    out = repaired.stdout
    # Steps 1-4 are cut: write_file, three read-only calls, edit_file, shell.
    assert f"resuming goes on from seq {cut_at - 1}: the 6 tool calls cut after it run again" in out
    assert "3 of them change things" in out
    listed = [line.split()[1] for line in out.splitlines() if line.startswith("  ")]
    assert listed == ["write_file", "edit_file", "shell"]
    assert "effect-4 >> effects.log" in out  # each shown with its arguments
    # The manifest now mirrors the cut journal: stopped mid-run, not completed.
    manifest = orjson.loads((directory / MANIFEST).read_bytes())
    assert manifest["status"] == "running"
    assert manifest["journal_seq"] == cut_at - 1
    listed_json = cli("sessions", "list", "--json", root=root)
    assert orjson.loads(listed_json.stdout)["status"] == "stopped (resumable)"


def test_repair_of_a_cut_with_only_read_only_calls_names_none(tmp_path: Path) -> None:
    root, directory = finished_session(tmp_path, 2)
    cut_at = corrupt_reply(directory, "Step 2.")
    repaired = cli("sessions", "repair", directory.name, root=root)
    assert repaired.returncode == 0, repaired.stderr
    assert f"from seq {cut_at - 1}: the 3 tool calls cut after it run again" in repaired.stdout
    assert "change things" not in repaired.stdout
    resumed = cli("resume", directory.name, "--yes", root=root)
    assert resumed.returncode == 0, resumed.stderr
    assert cli("sessions", "verify", directory.name, root=root).returncode == 0


def test_a_clean_repair_says_nothing_runs_again(tmp_path: Path) -> None:
    root, directory = finished_session(tmp_path, 1)
    repaired = cli("sessions", "repair", directory.name, root=root)
    assert repaired.returncode == 0, repaired.stderr
    assert "nothing to repair" in repaired.stdout
    assert "run again" not in repaired.stdout
