"""A process killed right after its appends return loses none of them.

SIGKILL leaves what reached the kernel and nothing of what sat in the process: so every
seq the child printed (after `append(durable=True)` returned) must be in the journal, for
every policy. (A power cut is another matter: only `always` and `batch` survive that.)
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from orchestrator.store import Durability, scan_journal

CHILD = Path(__file__).with_name("journal_child.py")


async def run_and_kill(
    path: Path, policy: Durability, tasks: int, batch: int, acks: int
) -> list[int]:
    """Run the child until it has acknowledged `acks` records, SIGKILL it, and return every
    seq it acknowledged (including what it printed in the meantime)."""
    command = [sys.executable, str(CHILD), str(path), policy.value, str(tasks), str(batch)]
    process = await trio.lowlevel.open_process(command, stdout=subprocess.PIPE)
    assert process.stdout is not None
    output = b""
    try:
        with trio.fail_after(60):
            while output.count(b"\n") < acks:
                chunk = await process.stdout.receive_some()
                assert chunk, "the child exited early"
                output += chunk
    finally:
        process.send_signal(signal.SIGKILL)
        with trio.fail_after(60):
            await process.wait()
            while chunk := await process.stdout.receive_some():  # acked before it died
                output += chunk
        await process.stdout.aclose()
    assert process.returncode == -signal.SIGKILL
    lines = output.split(b"\n")
    return [int(line) for line in lines[:-1]]  # the last piece may be a torn print


@pytest.mark.parametrize("policy", list(Durability))
@pytest.mark.parametrize(("tasks", "batch"), [(1, 1), (8, 1), (4, 3)])
async def test_every_acknowledged_record_survives_a_kill(
    tmp_path: Path, policy: Durability, tasks: int, batch: int
) -> None:
    path = tmp_path / "journal.jsonl"
    acked = await run_and_kill(path, policy, tasks, batch, acks=300)
    scan = scan_journal(path)  # a torn tail is allowed; anything else raises
    on_disk = {frame.seq for frame in scan.records}
    assert set(acked) <= on_disk
    assert len(scan.records) % batch == 0  # batches are whole or absent
    assert [frame.seq for frame in scan.records] == list(range(1, scan.last_seq + 1))
