"""The journal writer: seqs, batches, durability policies, group commit, failure, close."""

from __future__ import annotations

import errno
import threading
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
import trio.testing

from orchestrator.errors import SessionError
from orchestrator.store import Durability, Parsed, open_journal, scan_journal
from orchestrator.store import journal as journal_module


def clock() -> float:
    return 1000.0


def on_disk(path: Path) -> list[int]:
    """The seqs a separate reader sees in the file right now."""
    return [frame.seq for frame in scan_journal(path).records]


async def test_appends_come_back_in_order_with_their_batches(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    async with open_journal(path, clock=clock) as journal:
        assert journal.last_seq == 0
        assert await journal.append("started", "main", {"goal": "x"}) == 1
        items = [("call", "main", {"id": "c1"}), ("call", "main", {"id": "c2"}), ("note", "w1", {})]
        assert await journal.append_batch(items) == [2, 3, 4]
        assert await journal.append_batch([]) == []
        assert journal.last_seq == 4
    assert [f.parsed() for f in scan_journal(path).records] == [
        Parsed(1, 1_000_000, "started", "main", {"goal": "x"}),
        Parsed(2, 1_000_000, "call", "main", {"id": "c1"}),
        Parsed(3, 1_000_000, "call", "main", {"id": "c2"}),
        Parsed(4, 1_000_000, "note", "w1", {}),
    ]
    ends = [
        not line.endswith(b',"more":1,"crc":"', 0, len(line) - 10)
        for line in path.read_bytes().splitlines()
    ]
    assert ends == [True, False, False, True]


async def test_seqs_continue_across_opens(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    for expected in (1, 2, 3):
        async with open_journal(path) as journal:
            assert journal.last_seq == expected - 1
            assert await journal.append("k", "main", {}) == expected
    assert on_disk(path) == [1, 2, 3]


async def test_the_mark_names_what_was_appended_across_opens(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    for batch in (1, 3, 2):
        async with open_journal(path) as journal:
            assert journal.mark == scan_journal(path).end  # where the scan left it
            await journal.append_batch([("k", "main", {"n": n}) for n in range(batch)])
            mark = journal.mark  # before the writer has written it, too
        data = path.read_bytes()
        assert mark == (journal.last_seq, len(data), zlib.crc32(data))
    assert mark.seq == 6


@pytest.mark.parametrize("durability", list(Durability))
async def test_a_durable_append_is_in_the_file_when_it_returns(
    tmp_path: Path, durability: Durability
) -> None:
    path = tmp_path / "journal.jsonl"
    async with open_journal(path, durability=durability, max_delay=60) as journal:
        for seq in range(1, 4):
            assert await journal.append("k", "main", {"n": seq}, durable=True) == seq
            assert journal.durable_seq == seq
            assert on_disk(path) == list(range(1, seq + 1))


async def test_policy_always_makes_every_append_durable(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    async with open_journal(path, durability=Durability.ALWAYS, max_delay=60) as journal:
        await journal.append("k", "main", {})
        assert on_disk(path) == [1]
        await journal.append_batch([("k", "main", {}), ("k", "main", {})])
        assert on_disk(path) == [1, 2, 3]


async def test_a_plain_append_waits_at_most_max_delay_for_company(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    path = tmp_path / "journal.jsonl"
    async with open_journal(path, max_delay=10) as journal:
        await journal.append("k", "main", {})
        await journal.append("k", "main", {})
        await trio.sleep(9)
        assert (journal.durable_seq, on_disk(path)) == (0, [])
        await journal.flush()
        assert (journal.durable_seq, on_disk(path)) == (2, [1, 2])
        assert trio.current_time() < 10  # flush cut the wait short


async def test_the_writer_writes_after_max_delay_without_a_flush(
    tmp_path: Path, stuck: StuckWriter, autojump_clock: trio.testing.MockClock
) -> None:
    path = tmp_path / "journal.jsonl"
    async with open_journal(path, max_delay=10) as journal:
        await journal.append("k", "main", {})
        await stuck.entered.wait()  # the writer has started writing
        assert 10 <= trio.current_time() < 11
        stuck.release.set()
    assert on_disk(path) == [1]


async def test_concurrent_durable_appends_share_one_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs = []
    real_sync = journal_module.sync_data
    monkeypatch.setattr(journal_module, "sync_data", lambda fd: (syncs.append(fd), real_sync(fd)))
    path = tmp_path / "journal.jsonl"
    acked: list[int] = []

    async def appender(n: int) -> None:
        acked.append(await journal.append("k", f"w{n}", {"n": n}, durable=True))

    async with open_journal(path) as journal, trio.open_nursery() as nursery:
        await trio.testing.wait_all_tasks_blocked()  # the writer is idle: all 50 queue first
        for n in range(50):
            nursery.start_soon(appender, n)
    assert sorted(acked) == list(range(1, 51))
    assert len(syncs) == 1
    assert on_disk(path) == list(range(1, 51))


async def test_a_bad_record_raises_in_the_caller_and_queues_nothing(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    async with open_journal(path) as journal:
        with pytest.raises(TypeError):
            await journal.append_batch([("k", "main", {"ok": 1}), ("k", "main", {"bad": object()})])
        with pytest.raises(TypeError, match="must be a dict"):
            await journal.append("k", "main", ["not", "a", "dict"])  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="non-empty"):
            await journal.append("", "main", {})
        assert journal.last_seq == 0
        assert await journal.append("k", "main", {}) == 1
    assert on_disk(path) == [1]


async def test_an_exception_from_the_block_is_not_wrapped_and_records_are_flushed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.jsonl"

    async def block_that_raises() -> None:
        async with open_journal(path, max_delay=60) as journal:
            await journal.append("k", "main", {})
            raise KeyError("boom")

    with pytest.raises(KeyError):  # as it is, not in an ExceptionGroup
        await block_that_raises()
    assert on_disk(path) == [1]


async def test_a_cancelled_block_still_flushes_its_records(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with trio.CancelScope() as scope:
        async with open_journal(path, max_delay=60) as journal:
            await journal.append_batch([("k", "main", {}), ("k", "main", {})])
            scope.cancel()
            await trio.sleep_forever()
    assert scope.cancelled_caught
    assert on_disk(path) == [1, 2]


async def test_a_closed_journal_refuses_appends(tmp_path: Path) -> None:
    async with open_journal(tmp_path / "journal.jsonl") as journal:
        pass
    with pytest.raises(trio.ClosedResourceError):
        await journal.append("k", "main", {})
    with pytest.raises(trio.ClosedResourceError):
        await journal.flush()


async def test_a_failed_write_fails_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    path = tmp_path / "journal.jsonl"

    async def session() -> None:
        async with open_journal(path) as journal:
            await journal.append("k", "main", {}, durable=True)
            monkeypatch.setattr(journal_module, "write_all", disk_full)
            with pytest.raises(SessionError, match="records after seq 1 may be lost") as caught:
                await journal.append("k", "main", {}, durable=True)
            assert isinstance(caught.value.__cause__, OSError)
            with pytest.raises(SessionError):
                await journal.append("k", "main", {})
            with pytest.raises(SessionError):
                await journal.flush()

    with pytest.raises(SessionError, match="No space left"):  # the exit says so too
        await session()
    assert on_disk(path) == [1]


class StuckWriter:
    """Stands in for the journal's `write_all`: the first call blocks until released."""

    def __init__(self, real: Callable[[int, bytes], None]) -> None:
        self.real = real
        self.entered = trio.Event()
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, fd: int, data: bytes) -> None:  # in the writer's thread
        self.calls += 1
        if self.calls == 1:
            trio.from_thread.run_sync(self.entered.set)
            self.release.wait()
        self.real(fd, data)


@pytest.fixture
def stuck(monkeypatch: pytest.MonkeyPatch) -> StuckWriter:
    writer = StuckWriter(journal_module.write_all)
    monkeypatch.setattr(journal_module, "write_all", writer)
    return writer


async def release_after(writer: StuckWriter, seconds: float) -> None:
    await trio.sleep(seconds)
    writer.release.set()


async def test_closing_gives_up_after_close_timeout(
    tmp_path: Path, stuck: StuckWriter, autojump_clock: trio.testing.MockClock
) -> None:
    path = tmp_path / "journal.jsonl"

    async def session(nursery: trio.Nursery) -> None:
        async with open_journal(path, close_timeout=10) as journal:
            await journal.append("k", "main", {})
            await stuck.entered.wait()  # the writer holds seq 1, in its thread
            await journal.append("k", "main", {})
            nursery.start_soon(release_after, stuck, 100)

    async with trio.open_nursery() as nursery:
        with pytest.raises(SessionError, match="timed out: seq 2-2 may not be on disk"):
            await session(nursery)
        assert trio.current_time() >= 100  # the file is not closed under a running write
    assert on_disk(path) == [1]


async def test_appenders_wait_while_too_much_is_queued(tmp_path: Path, stuck: StuckWriter) -> None:
    path = tmp_path / "journal.jsonl"
    done = trio.Event()
    async with open_journal(path, max_batch_bytes=1000) as journal, trio.open_nursery() as nursery:
        await journal.append("k", "main", {})
        await stuck.entered.wait()
        for _ in range(3):  # 3 x 3 KB queued behind the stuck write: past 8 x 1000 bytes
            await journal.append("k", "main", {"text": "x" * 3000})

        async def one_more() -> None:
            await journal.append("k", "main", {})
            done.set()

        nursery.start_soon(one_more)
        await trio.testing.wait_all_tasks_blocked()
        assert (done.is_set(), journal.last_seq) == (False, 4)
        stuck.release.set()
        await done.wait()
        assert journal.last_seq == 5
    assert on_disk(path) == [1, 2, 3, 4, 5]
