"""`orchestrator worker` processes for the tests: started on a database, their output
read as it comes (a test waits for a line, never for time), stopped with Ctrl+C or
killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import trio

# `python -c PRETEND VERSION CODE worker ...`: the command line, taking itself for
# VERSION (unless ""), after running CODE (a test's change to the worker, such as a kill).
PRETEND = (
    "import sys, orchestrator._version as v\n"
    "if sys.argv[1]:\n"
    "    v.__version__ = sys.argv[1]\n"
    "exec(sys.argv[2])\n"
    "from orchestrator.cli.main import main\n"
    "sys.exit(main(sys.argv[3:]))\n"
)


class WorkerProcess:
    """One `orchestrator worker` (with --yes), its output lines kept."""

    def __init__(self, process: trio.Process, log: Path) -> None:
        self.process = process
        self.lines: list[str] = []
        self._log = log
        self._changed = trio.Event()

    async def read(self) -> None:
        assert self.process.stdout is not None
        pending = b""
        with self._log.open("ab") as log:
            async for chunk in self.process.stdout:
                log.write(chunk)
                log.flush()
                pending += chunk
                *whole, pending = pending.split(b"\n")
                self.lines.extend(line.decode(errors="replace") for line in whole)
                self._changed.set()
                self._changed = trio.Event()
        self._changed.set()

    async def see(self, text: str) -> str:
        """The first line holding `text`, once it is printed."""
        while True:
            for line in self.lines:
                if text in line:
                    return line
            if self.process.returncode is not None:
                raise AssertionError(
                    f"the worker ended ({self.process.returncode}) before {text!r}"
                )
            await self._changed.wait()

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGINT)
            with trio.move_on_after(30):
                await self.process.wait()
            if self.process.returncode is None:
                self.kill()
                await self.process.wait()


async def start_worker(
    nursery: trio.Nursery,
    url: str,
    tmp: Path,
    name: str = "worker",
    *extra: str,
    version: str | None = None,
    before: str = "",
    yes: bool = True,
) -> WorkerProcess:
    """An `orchestrator worker` on `url` (one that takes itself for `version`, when
    given: to see what a worker of another version does; that runs the Python code
    `before` first, when given). Without `yes`, it puts the calls the rules ask about
    to the task's session."""
    config = tmp / "worker.toml"
    config.touch()
    pretend = version is not None or before
    program = ["-c", PRETEND, version or "", before] if pretend else ["-m", "orchestrator"]
    flags = ["--config", str(config), "--beat", "0.5", "--silent", "3", *(["--yes"] if yes else [])]
    process = await trio.lowlevel.open_process(
        [sys.executable, *program, "worker", "--database-url", url, *flags, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1"},
    )
    worker = WorkerProcess(process, tmp / f"{name}.log")
    nursery.start_soon(worker.read)
    return worker


async def printed(workers: list[WorkerProcess], text: str, times: int) -> None:
    """Return once the workers have printed lines holding `text` `times` times in all."""
    while sum(w.count(text) for w in workers) < times:
        async with trio.open_nursery() as nursery:
            for worker in workers:
                nursery.start_soon(_then_cancel, worker._changed, nursery.cancel_scope)


async def _then_cancel(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def mail_sent(url: str, workflow_id: str) -> dict[str, bool]:
    """The messages DBOS holds for the workflow `workflow_id` on the topic of mail, by
    their key (`<idempotency key>::<workflow id>`): whether each was received."""
    import sqlalchemy as sa

    table = "notifications" if url.startswith("sqlite") else "dbos.notifications"
    query = sa.text(
        f"SELECT message_uuid, consumed FROM {table} "
        "WHERE destination_uuid = :workflow AND topic = 'mail'"
    )
    engine = sa.create_engine(url)
    try:
        with engine.connect() as db:
            rows = db.execute(query, {"workflow": workflow_id}).all()
    finally:
        engine.dispose()
    suffix = f"::{workflow_id}"
    return {key.removesuffix(suffix): bool(consumed) for key, consumed in rows}
