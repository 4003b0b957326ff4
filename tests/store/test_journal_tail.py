"""Reading a journal from its end (store/tail.py), and finding a disk's refusal inside
whatever wrapped it (store/disk.py)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from orchestrator.errors import SessionError, StorageFailed
from orchestrator.store._line import encode
from orchestrator.store.disk import storage_failure
from orchestrator.store.tail import JournalTail, read_tail


def journal(path: Path, records: list[tuple[str, dict[str, object], bool]]) -> list[int]:
    """Write records (kind, body, ends its batch); the offset after each."""
    data, ends = b"", []
    for seq, (kind, body, end) in enumerate(records, 1):
        data += encode(seq, 1000 * seq, kind, "main", body, end=end)
        ends.append(len(data))
    path.write_bytes(data)
    return ends


STATUS = "session_status"


@pytest.mark.parametrize("chunk", [1 << 20, 64, 7])  # whole, and lines across chunks
def test_the_last_status_and_the_end(tmp_path: Path, chunk: int) -> None:
    path = tmp_path / "journal.jsonl"
    ends = journal(
        path,
        [
            (STATUS, {"status": "running"}, True),
            ("msg", {"text": 'a "k":"session_status","a": inside text'}, True),
            (STATUS, {"status": "completed"}, True),
            ("msg", {"text": "after"}, True),
        ],
    )
    tail = read_tail(path, STATUS, chunk=chunk)
    assert tail is not None
    assert (tail.last_seq, tail.end_offset) == (4, ends[3])
    assert tail.found is not None
    assert (tail.found["seq"], tail.found["status"]) == (3, "completed")
    # From a point the manifest saw past the last status: nothing newer, the end as is.
    assert read_tail(path, STATUS, since_seq=3, since_offset=ends[2], chunk=chunk) == (
        JournalTail(4, ends[3], None)
    )


def test_a_torn_tail_and_a_partial_batch_are_not_records(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    ends = journal(
        path,
        [
            (STATUS, {"status": "running"}, True),
            (STATUS, {"status": "completed"}, False),  # its batch never ended
            ("msg", {"text": "x"}, False),
        ],
    )
    with path.open("ab") as file:
        file.write(b'{"seq":4,"t":1,"k":"session_status","a":"main","status":"fail')
    tail = read_tail(path, STATUS)
    assert tail is not None
    assert (tail.last_seq, tail.end_offset) == (1, ends[0])
    assert tail.found is not None
    assert tail.found["status"] == "running"


def test_a_journal_that_does_not_go_on_from_the_point_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    ends = journal(path, [(STATUS, {"status": "running"}, True), ("msg", {}, True)])
    assert read_tail(path, STATUS, since_seq=2, since_offset=ends[1] + 10) is None  # shorter
    assert read_tail(path, STATUS, since_seq=5, since_offset=ends[0]) is None  # other seq
    assert read_tail(path, STATUS, since_seq=1, since_offset=ends[0] - 3) is None  # mid-line
    assert read_tail(tmp_path / "none", STATUS) == JournalTail(0, 0, None)


def test_a_disk_error_is_found_in_any_nesting() -> None:
    full = OSError(errno.ENOSPC, "No space left on device")
    failed = StorageFailed("journal failed", path=Path("j"), cause=full, kept_seq=7)
    try:
        raise failed from full
    except StorageFailed as exc:
        chained = exc
    deep = BaseExceptionGroup("outer", [ValueError("x"), ExceptionGroup("inner", [chained])])
    assert storage_failure(deep) is failed
    # A bare OSError of the disk, as the cause of another error, in a group.
    try:
        raise SessionError("could not write") from OSError(errno.EROFS, "Read-only")
    except SessionError as exc:
        wrapped = exc
    found = storage_failure(ExceptionGroup("g", [wrapped]))
    assert isinstance(found, OSError)
    assert found.errno == errno.EROFS
    # Anything else is not the disk's.
    assert storage_failure(ExceptionGroup("g", [OSError(errno.ENOENT, "gone")])) is None
    assert storage_failure(KeyboardInterrupt()) is None
