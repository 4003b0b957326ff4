"""Repair: keep the whole batches before the first fault, set the original aside."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from orchestrator.errors import JournalCorrupt
from orchestrator.store import RepairReport, repair_journal, scan_journal
from orchestrator.store._line import encode

NOW = datetime(2026, 11, 23, 2, 53, 10, tzinfo=UTC)


def lines_of(batches: list[int]) -> list[bytes]:
    lines, seq = [], 0
    for size in batches:
        for index in range(size):
            seq += 1
            lines.append(encode(seq, 1000, "k", "main", {"n": seq}, end=index == size - 1))
    return lines


def test_repair_keeps_the_batches_before_the_fault_and_the_original_aside(tmp_path: Path) -> None:
    lines = lines_of([2, 2, 2])
    lines[3] = lines[3].replace(b'"n":4', b'"n":9')  # inside the second batch
    original = b"".join(lines)
    path = tmp_path / "journal.jsonl"
    path.write_bytes(original)
    with pytest.raises(JournalCorrupt):
        scan_journal(path)

    report = repair_journal(path, now=lambda: NOW)

    backup = tmp_path / "journal.jsonl.corrupt-20261123T025310"
    kept = len(lines[0]) + len(lines[1])
    assert report == RepairReport(
        path=path,
        backup=backup,
        kept_last_seq=2,
        kept_bytes=kept,
        cut_bytes=len(original) - kept,
        cut_lines=4,
        reason="line 4 fails its checksum",
    )
    assert backup.read_bytes() == original
    assert path.read_bytes() == original[:kept]
    scan = scan_journal(path)
    assert (scan.last_seq, scan.cut) == (2, None)
    assert "kept seq 1-2" in report.describe()
    assert str(backup) in report.describe()


def test_repair_cuts_a_gap_and_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    gap = b"".join(encode(s, 1000, "k", "main", {}, end=True) for s in (1, 2, 4))
    path.write_bytes(gap + b'{"seq":5,"ti')
    report = repair_journal(path, now=lambda: NOW)
    assert (report.kept_last_seq, report.cut_lines) == (2, 2)
    assert report.reason == "line 3 is out of sequence (seq 3 belongs there)"
    assert scan_journal(path).last_seq == 2

    path.write_bytes(b"".join(lines_of([1, 1])) + b'{"seq":3')
    report = repair_journal(path, now=lambda: NOW)
    assert report.backup == tmp_path / "journal.jsonl.corrupt-20261123T025310-2"  # no clobbering
    assert (report.kept_last_seq, report.cut_lines, report.cut_bytes) == (2, 1, 8)
    assert scan_journal(path).cut is None


def test_repairing_a_clean_journal_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(data := b"".join(lines_of([1, 3])))
    report = repair_journal(path, now=lambda: NOW)
    assert (report.backup, report.kept_last_seq, report.cut_bytes, report.reason) == (
        None,
        4,
        0,
        None,
    )
    assert path.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["journal.jsonl"]
