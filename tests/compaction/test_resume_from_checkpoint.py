"""A resume reads the journal from where the contexts start (the newest checkpoint of
each agent), not from its first byte: the snapshot keeps where each context's record
starts in the file, and the part up to the snapshot is checked by one CRC continued from
there. What it finds must be what a whole read finds; anything unexpected reads it all."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from orchestrator import create_session, load_state
from orchestrator.session import verify
from orchestrator.session.live import JOURNAL
from orchestrator.session.replay import read_snapshot
from orchestrator.store import scan_journal
from tests.compaction.test_run import reader, run


@pytest.fixture
async def compacted(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for index in range(4):
        (workspace / f"f{index}.txt").write_text(f"line {index}\n" * 500)
    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="read", model="m", workspace=workspace)
    result = await run(root, session_id, reader(30, []))
    assert result.status == "completed"
    return directory


async def test_the_scan_from_a_checkpoint_finds_what_the_whole_scan_finds(compacted: Path) -> None:
    snapshot = read_snapshot(compacted, warn=pytest.fail)
    assert snapshot is not None
    main = snapshot.agents["main"]
    assert main.start_mark is not None
    assert main.start_mark.seq == main.start - 1 > 0
    path = compacted / JOURNAL
    after = main.start - 1
    whole = scan_journal(path, after_seq=after, mark=snapshot.journal)
    part = scan_journal(path, after_seq=after, mark=snapshot.journal, start=main.start_mark)
    assert part.lines == whole.lines
    assert (part.last_seq, part.end_offset, part.file_size, part.end, part.cut) == (
        whole.last_seq,
        whole.end_offset,
        whole.file_size,
        whole.end,
        None,
    )
    assert bytes(part.head)  # the snapshot's prefix came as one block, unsplit
    assert verify(compacted) == []


async def test_a_mark_the_file_does_not_hold_reads_it_all(compacted: Path) -> None:
    snapshot = read_snapshot(compacted, warn=pytest.fail)
    assert snapshot is not None
    start = snapshot.agents["main"].start_mark
    assert start is not None
    path = compacted / JOURNAL
    after = snapshot.agents["main"].start - 1
    whole = scan_journal(path, after_seq=after, mark=snapshot.journal)
    for wrong in (
        start._replace(crc=start.crc ^ 1),  # not the CRC of what precedes it
        start._replace(offset=start.offset - 1),  # not a line's start
        start._replace(seq=start.seq - 1),  # another line
    ):
        scan = scan_journal(path, after_seq=after, mark=snapshot.journal, start=wrong)
        assert scan.lines == whole.lines
        assert scan.end == whole.end


async def test_a_torn_tail_after_the_snapshot_is_cut_as_ever(compacted: Path) -> None:
    path = compacted / JOURNAL
    with path.open("ab") as file:
        file.write(b'{"seq":99999,"t":1,"k":"turn_started","a":"main"')  # no newline: torn
    state = load_state(compacted, warn=lambda _: None)
    assert state.status == "completed"
    snapshot = read_snapshot(compacted, warn=pytest.fail)
    assert snapshot is not None
    start = snapshot.agents["main"].start_mark
    scan = scan_journal(path, after_seq=start.seq, mark=snapshot.journal, start=start)
    assert scan.cut is not None
    assert scan.end_offset < scan.file_size


async def test_a_corrupt_line_before_the_checkpoint_is_found_by_verify(compacted: Path) -> None:
    # A resume does not read the part before the checkpoint (nothing there is needed);
    # `sessions verify` still checks every line.
    path = compacted / JOURNAL
    data = bytearray(path.read_bytes())
    second = data.index(b"\n") + 1
    data[second + 20] ^= 0x01
    path.write_bytes(bytes(data))
    assert load_state(compacted, warn=lambda _: None).status == "completed"
    problems = verify(compacted)
    assert problems
    assert "seq 2" in problems[0] or "line 2" in problems[0]


async def test_verify_names_a_start_mark_the_journal_does_not_hold(compacted: Path) -> None:
    snapshot_path = compacted / "snapshot.json"
    data = orjson.loads(snapshot_path.read_bytes())
    seq, offset, crc = data["agents"]["main"]["start_mark"]
    data["agents"]["main"]["start_mark"] = [seq, offset, crc ^ 1]
    snapshot_path.write_bytes(orjson.dumps(data))
    problems = verify(compacted)
    assert len(problems) == 1
    assert "marks where main's context starts" in problems[0]
    # A resume reads the whole journal instead, and finds the same state.
    assert load_state(compacted, warn=pytest.fail).status == "completed"
