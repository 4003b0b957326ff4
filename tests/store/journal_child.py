"""A child process for the crash tests: appends durable records until killed.

    python journal_child.py PATH POLICY TASKS BATCH

TASKS concurrent appenders each append BATCH-record batches with durable=True, forever,
and print each acknowledged seq on stdout (one os.write per line) right after the append
returns. The parent SIGKILLs it mid-stream and checks that every printed seq is on disk.
"""

from __future__ import annotations

import os
import sys

import trio

from orchestrator.store import Durability, Journal, open_journal

BODY = {"text": "x" * 900}


async def appender(journal: Journal, batch: int, task: int) -> None:
    items = [("child", f"t{task}", BODY)] * batch
    while True:
        seqs = await journal.append_batch(items, durable=True)
        os.write(1, b"".join(b"%d\n" % seq for seq in seqs))


async def main(path: str, policy: str, tasks: int, batch: int) -> None:
    async with (
        open_journal(path, durability=Durability(policy)) as journal,
        trio.open_nursery() as nursery,
    ):
        for task in range(tasks):
            nursery.start_soon(appender, journal, batch, task)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
