"""Reading journals: committed records back, torn tails cut, corruption refused."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.errors import JournalCorrupt
from orchestrator.store import Frame, JournalMark, Parsed, TailCut, open_journal, scan_journal
from orchestrator.store._line import FRAME_KEYS, encode


def record_lines(batches: Sequence[int]) -> list[bytes]:
    """Lines of a journal whose batches have the given sizes, seqs from 1."""
    lines = []
    seq = 0
    for size in batches:
        for index in range(size):
            seq += 1
            body = {"n": seq, "text": f"record {seq}"}
            lines.append(encode(seq, 1000 + seq, "k", "main", body, end=index == size - 1))
    return lines


def frames(seqs: range) -> list[Parsed]:
    return [Parsed(s, 1000 + s, "k", "main", {"n": s, "text": f"record {s}"}) for s in seqs]


def parsed(records: list[Frame]) -> list[Parsed]:
    return [frame.parsed() for frame in records]


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(data)
    return path


def flip(line: bytes, index: int) -> bytes:
    """`line` with the byte at `index` changed (never into a newline)."""
    new = (line[index] + 1) % 256
    if new == ord("\n"):
        new += 1
    return line[:index] + bytes([new]) + line[index + 1 :]


def test_scan_returns_every_committed_record(tmp_path: Path) -> None:
    data = b"".join(record_lines([1, 3, 2]))
    scan = scan_journal(write(tmp_path, data))
    assert parsed(scan.records) == frames(range(1, 7))
    assert (scan.last_seq, scan.end_offset, scan.file_size, scan.cut) == (
        6,
        len(data),
        len(data),
        None,
    )


def test_a_missing_or_empty_journal_scans_empty(tmp_path: Path) -> None:
    for path in (tmp_path / "missing.jsonl", write(tmp_path, b"")):
        scan = scan_journal(path)
        assert (scan.records, scan.last_seq, scan.end_offset, scan.cut) == ([], 0, 0, None)


def test_after_seq_returns_only_later_records_but_checks_all(tmp_path: Path) -> None:
    lines = record_lines([2, 2, 2])
    path = write(tmp_path, b"".join(lines))
    scan = scan_journal(path, after_seq=4)
    assert (parsed(scan.records), scan.last_seq) == (frames(range(5, 7)), 6)
    assert scan_journal(path, after_seq=99).records == []

    lines[1] = flip(lines[1], 30)
    path.write_bytes(b"".join(lines))
    with pytest.raises(JournalCorrupt):
        scan_journal(path, after_seq=4)


def test_a_torn_last_record_is_cut_at_every_byte_offset(tmp_path: Path) -> None:
    lines = record_lines([2, 1, 3, 1])
    data = b"".join(lines)
    start = len(data) - len(lines[-1])
    assert scan_journal(write(tmp_path, data[:start])).cut is None
    for stop in range(start + 1, len(data)):
        scan = scan_journal(write(tmp_path, data[:stop]))
        assert (parsed(scan.records), scan.last_seq, scan.end_offset) == (
            frames(range(1, 7)),
            6,
            start,
        )
        cut = scan.cut
        assert cut is not None
        assert (cut.offset, cut.nbytes, cut.first_seq, cut.last_seq) == (start, stop - start, 7, 7)
        assert cut.reason == "the last line is torn (no newline)"


def test_a_torn_batch_is_dropped_whole(tmp_path: Path) -> None:
    lines = record_lines([2, 3])
    data = b"".join(lines)
    start = len(lines[0]) + len(lines[1])
    for stop in range(start + 1, len(data)):
        scan = scan_journal(write(tmp_path, data[:stop]))
        assert (parsed(scan.records), scan.last_seq, scan.end_offset) == (
            frames(range(1, 3)),
            2,
            start,
        )
        assert scan.cut is not None
        assert (scan.cut.first_seq, scan.cut.offset, scan.cut.nbytes) == (3, start, stop - start)
    whole_lines = start + len(lines[2]) + len(lines[3])
    scan = scan_journal(write(tmp_path, data[:whole_lines]))
    assert scan.cut == TailCut(
        start, whole_lines - start, 3, 4, "partial batch (2 records without a batch end)"
    )
    assert scan.cut.describe() == (
        f"seq 3-4 (2 records, {whole_lines - start} bytes at offset {start}): "
        "partial batch (2 records without a batch end)"
    )


def test_a_bad_checksum_in_the_last_record_is_cut(tmp_path: Path) -> None:
    lines = record_lines([1, 1, 1])
    lines[-1] = lines[-1].replace(b"record 3", b"record 8")
    scan = scan_journal(write(tmp_path, b"".join(lines)))
    assert parsed(scan.records) == frames(range(1, 3))
    assert scan.cut is not None
    assert (scan.cut.first_seq, scan.cut.last_seq) == (3, 3)
    assert scan.cut.reason == "the last line fails its checksum"


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda line: line.replace(b"record 3", b"record 8"), "fails its checksum"),
        (lambda line: b"\n", "is too short to be a record"),
        (lambda line: b"x" + line, 'does not start with {"seq":'),
        (lambda line: line[:-3] + b"\n", "has no checksum field at its end"),
    ],
)
def test_a_bad_record_before_the_end_is_corruption(
    tmp_path: Path, damage: Any, reason: str
) -> None:
    lines = record_lines([1, 1, 1, 1])
    lines[2] = damage(lines[2])
    path = write(tmp_path, b"".join(lines))
    with pytest.raises(JournalCorrupt) as caught:
        scan_journal(path)
    assert (caught.value.path, caught.value.line, caught.value.seq) == (path, 3, 3)
    assert f"{path} line 3 (seq 3) {reason};" in str(caught.value)
    assert "not a torn tail" in str(caught.value)


@pytest.mark.parametrize(
    ("seqs", "line", "claimed"),
    [
        ([1, 2, 4, 5], 3, 4),  # a gap
        ([1, 2, 2, 3], 3, 2),  # a repeat
        ([2, 3], 1, 2),  # not starting at 1
        ([1, 2, 4], 3, 4),  # a gap on the last line: well-formed, so never a torn write
    ],
)
def test_a_seq_out_of_sequence_is_corruption(
    tmp_path: Path, seqs: list[int], line: int, claimed: int
) -> None:
    data = b"".join(encode(s, 1000, "k", "main", {}, end=True) for s in seqs)
    path = write(tmp_path, data)
    with pytest.raises(
        JournalCorrupt, match=f"is out of sequence \\(seq {line} belongs there\\)"
    ) as caught:
        scan_journal(path)
    assert (caught.value.line, caught.value.seq) == (line, claimed)


def mark_after(lines: list[bytes], seq: int) -> JournalMark:
    """The mark of a journal of `lines` after record `seq`, as its writer keeps it."""
    prefix = b"".join(lines[:seq])
    return JournalMark(seq, len(prefix), zlib.crc32(prefix))


def test_a_mark_vouches_for_its_prefix_and_the_lines_come_back_the_same(tmp_path: Path) -> None:
    lines = record_lines([1, 3, 2, 2])
    path = write(tmp_path, b"".join(lines))
    whole = scan_journal(path)
    assert whole.end == mark_after(lines, 8)
    for seq in (1, 4, 6, 8):  # every batch end
        for after in (0, 2, seq, 7):
            scan = scan_journal(path, after_seq=after, mark=mark_after(lines, seq))
            assert scan.lines == scan_journal(path, after_seq=after).lines
            assert scan.lines is scan.lines  # the head is split once
            assert (scan.last_seq, scan.end_offset, scan.end) == (8, whole.end_offset, whole.end)
            # The prefix stays bytes: only what follows the mark is split into lines.
            assert bytes(scan.head) == b"".join(lines[after:seq])
            assert scan.tail == [line.rstrip(b"\n") for line in lines[max(after, seq) :]]


def test_a_prefix_that_no_longer_fits_its_mark_is_checked_line_by_line(tmp_path: Path) -> None:
    lines = record_lines([2, 2, 2])
    mark = mark_after(lines, 4)
    lines[1] = flip(lines[1], 30)  # a record the mark covers, damaged since
    path = write(tmp_path, b"".join(lines))
    with pytest.raises(JournalCorrupt) as caught:
        scan_journal(path, mark=mark)
    assert (caught.value.line, caught.value.seq) == (2, 2)


@pytest.mark.parametrize(
    "wrong",
    [
        lambda lines: mark_after(lines, 4)._replace(seq=3),  # names another record
        lambda lines: mark_after(lines, 4)._replace(offset=mark_after(lines, 4).offset - 1),
        lambda lines: mark_after(lines, 4)._replace(offset=10**9),  # longer than the journal
        lambda lines: mark_after(lines, 4)._replace(crc=mark_after(lines, 4).crc ^ 1),
        lambda lines: JournalMark(0, 0, 0),
        lambda lines: mark_after(lines, 3),  # its CRC right, but inside a batch
    ],
)
def test_a_mark_that_does_not_fit_is_ignored(tmp_path: Path, wrong: Any) -> None:
    lines = record_lines([2, 2, 2])
    path = write(tmp_path, b"".join(lines))
    scan = scan_journal(path, after_seq=1, mark=wrong(lines))
    assert scan.head == b""  # nothing vouched for: every line checked and split
    assert scan.tail == [line.rstrip(b"\n") for line in lines[1:]]
    assert scan.end == scan_journal(path).end


def test_the_lines_after_a_mark_are_still_checked(tmp_path: Path) -> None:
    lines = record_lines([2, 2, 2])
    mark = mark_after(lines, 2)
    lines[3] = flip(lines[3], 30)
    path = write(tmp_path, b"".join(lines))
    with pytest.raises(JournalCorrupt) as caught:
        scan_journal(path, mark=mark)
    assert (caught.value.line, caught.value.seq) == (4, 4)
    lines = record_lines([2, 2, 2])
    path.write_bytes(b"".join(lines)[:-5])  # a torn last line after the mark: cut
    scan = scan_journal(path, mark=mark)
    assert (scan.last_seq, scan.cut is not None) == (4, True)
    assert scan.tail == [line.rstrip(b"\n") for line in lines[2:4]]


async def test_opening_truncates_a_cut_tail_and_continues_the_seqs(tmp_path: Path) -> None:
    lines = record_lines([2, 3])
    good = b"".join(lines[:2])
    path = write(tmp_path, b"".join(lines)[:-7])
    async with open_journal(path, clock=lambda: 2000.0) as journal:
        assert journal.cut is not None
        assert (journal.cut.first_seq, journal.cut.last_seq, journal.cut.offset) == (
            3,
            5,
            len(good),
        )
        assert path.read_bytes() == good
        assert await journal.append("k", "main", {"n": 3, "text": "record 3"}) == 3
    scan = scan_journal(path)
    assert scan.cut is None
    assert parsed(scan.records) == [
        *frames(range(1, 3)),
        Parsed(3, 2_000_000, "k", "main", {"n": 3, "text": "record 3"}),
    ]


async def test_opening_reuses_a_fresh_scan_and_refuses_a_corrupt_journal(tmp_path: Path) -> None:
    lines = record_lines([1, 1])
    path = write(tmp_path, b"".join(lines) + b"torn")
    scan = scan_journal(path)
    async with open_journal(path, scan=scan) as journal:
        assert (journal.cut, journal.last_seq) == (scan.cut, 2)

    corrupt = [lines[0], flip(lines[1], 20), *record_lines([1, 1])[1:]]
    path.write_bytes(data := b"".join(corrupt))
    with pytest.raises(JournalCorrupt):
        async with open_journal(path):
            pass
    assert path.read_bytes() == data


# --- properties -------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
keys = st.text(max_size=8).filter(lambda key: key not in FRAME_KEYS)
bodies = st.dictionaries(keys, json_values, max_size=6)
records = st.tuples(st.text(min_size=1, max_size=12), st.text(max_size=12), bodies)


@given(st.lists(records, min_size=1, max_size=8))
def test_any_records_round_trip(tmp_path_factory: pytest.TempPathFactory, items: list[Any]) -> None:
    data = b"".join(
        encode(seq, 1500, kind, agent, body, end=True)
        for seq, (kind, agent, body) in enumerate(items, 1)
    )
    path = tmp_path_factory.mktemp("j") / "journal.jsonl"
    path.write_bytes(data)
    expected = [Parsed(seq, 1500, *item) for seq, item in enumerate(items, 1)]
    assert parsed(scan_journal(path).records) == expected


@given(st.lists(st.integers(1, 4), min_size=1, max_size=6), st.data())
def test_any_truncation_is_at_most_a_tail_cut(
    tmp_path_factory: pytest.TempPathFactory, batches: list[int], data: st.DataObject
) -> None:
    lines = record_lines(batches)
    whole = b"".join(lines)
    stop = data.draw(st.integers(0, len(whole)), label="stop")
    path = tmp_path_factory.mktemp("j") / "journal.jsonl"
    path.write_bytes(whole[:stop])
    # The committed records: those of every batch that ends (newline included) by `stop`.
    committed = offset = seq = 0
    for size in batches:
        offset += sum(len(line) for line in lines[seq : seq + size])
        seq += size
        if offset <= stop:
            committed = seq
    scan = scan_journal(path)
    assert parsed(scan.records) == frames(range(1, committed + 1))
    assert (scan.cut is None) == (scan.end_offset == stop)


@given(st.lists(st.integers(1, 3), min_size=1, max_size=5), st.data())
def test_any_damage_to_the_last_line_is_a_tail_cut(
    tmp_path_factory: pytest.TempPathFactory, batches: list[int], data: st.DataObject
) -> None:
    lines = record_lines(batches)
    index = data.draw(st.integers(0, len(lines[-1]) - 1), label="index")
    lines[-1] = flip(lines[-1], index)
    path = tmp_path_factory.mktemp("j") / "journal.jsonl"
    path.write_bytes(b"".join(lines))
    scan = scan_journal(path)
    kept = sum(batches[:-1])
    assert parsed(scan.records) == frames(range(1, kept + 1))
    assert scan.cut is not None
    assert (scan.cut.first_seq, scan.cut.last_seq) == (kept + 1, len(lines))
