"""A real Postgres for the dbos engine's tests and benchmarks: `initdb` and `pg_ctl` of
the newest `/usr/lib/postgresql/*/bin` (Debian's layout; `.ci/run` installs
`postgresql-15` where it is missing), in a temporary directory, listening on a free
loopback port, run as an unprivileged user (`nobody`) when we run as root, since
Postgres refuses root. `missing()` says why there is none here, for a skip.

Used by `tests/engine/conftest.py` (the `postgres_url` fixture) and by
`tests/benchmarks/bench_engine.py`."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

POSTGRES_BINS = Path("/usr/lib/postgresql")


def bindir() -> Path | None:
    """The newest installed Postgres's `bin` directory, if any."""
    found = sorted(POSTGRES_BINS.glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return found[-1].parent if found else None


def missing() -> str | None:
    """Why no Postgres can be started here, or None when one can."""
    if bindir() is None:
        return f"no Postgres here (no {POSTGRES_BINS}/*/bin/initdb; .ci/run installs it)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Postgres:
    """A Postgres server of our own, in `base`, on a free port: `start()` and `stop()` it
    on the same data directory (a database that goes away and comes back). Not
    `durable` (the tests'): `fsync=off`, which a throw-away cluster does not need;
    `durable` (a benchmark's): Postgres's defaults, every commit flushed to disk."""

    def __init__(self, bin_dir: Path, base: Path, *, durable: bool = False) -> None:
        self.bindir, self.base, self.durable = bin_dir, base, durable
        self.data, self.port = base / "data", _free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(base, nobody.pw_uid, nobody.pw_gid)
            self.as_user = ["runuser", "-u", "nobody", "--"]
        self.run(
            bin_dir / "initdb",
            "-D",
            self.data,
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
        )

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def run(self, *command: str | Path) -> None:
        subprocess.run(
            [*self.as_user, *map(str, command)],
            check=True,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1"
        if not self.durable:
            options += " -c fsync=off"
        log = self.base / "server.log"
        self.run(self.bindir / "pg_ctl", "-D", self.data, "-l", log, "-o", options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self.run(self.bindir / "pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()


@contextlib.contextmanager
def started(*, durable: bool = False) -> Iterator[Postgres]:
    """A started `Postgres` in a temporary directory, stopped and removed after. Raises
    `LookupError` with `missing()`'s reason when there is none."""
    found = bindir()
    if found is None:
        raise LookupError(missing())
    base = Path(tempfile.mkdtemp(prefix="orchestrator-pg-"))
    try:
        postgres = Postgres(found, base, durable=durable)
        postgres.start()
        try:
            yield postgres
        finally:
            if postgres.running():
                postgres.stop("immediate")
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def server(*, durable: bool = False) -> Iterator[str]:
    """A fresh Postgres server for the block: its URL (user `postgres`, no password,
    loopback only)."""
    with started(durable=durable) as postgres:
        yield postgres.url
