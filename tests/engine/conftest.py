"""A real Postgres for the dbos engine's tests: `initdb` and `pg_ctl` of the newest
`/usr/lib/postgresql/*/bin` (Debian's layout; `.ci/run` installs `postgresql-15` where it
is missing), in a temporary directory, listening on a free loopback port, run as an
unprivileged user (`nobody`) when the tests run as root, since Postgres refuses root. A
machine without it skips the tests that need it, saying why."""

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

import pytest

POSTGRES_BINS = Path("/usr/lib/postgresql")


def _bindir() -> Path | None:
    found = sorted(POSTGRES_BINS.glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return found[-1].parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Postgres:
    """A Postgres server of the tests' own, in `base`, on `port`: `start()` and `stop()`
    it on the same data directory (a database that goes away and comes back)."""

    def __init__(self, bindir: Path, base: Path) -> None:
        self.bindir, self.base = bindir, base
        self.data, self.port = base / "data", _free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(base, nobody.pw_uid, nobody.pw_gid)
            self.as_user = ["runuser", "-u", "nobody", "--"]
        self.run(
            bindir / "initdb",
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
        options = f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = self.base / "server.log"
        self.run(self.bindir / "pg_ctl", "-D", self.data, "-l", log, "-o", options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self.run(self.bindir / "pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()


@contextlib.contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A started `Postgres` in a temporary directory, stopped and removed after."""
    bindir = _bindir()
    if bindir is None:
        pytest.skip(f"no Postgres here (no {POSTGRES_BINS}/*/bin/initdb; .ci/run installs it)")
    base = Path(tempfile.mkdtemp(prefix="orchestrator-pg-"))
    try:
        server = Postgres(bindir, base)
        server.start()
        try:
            yield server
        finally:
            if server.running():
                server.stop("immediate")
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a fresh Postgres server (user `postgres`, no password, loopback only)
    that lives as long as the test session."""
    with postgres_server() as server:
        yield server.url


@pytest.fixture
def postgres() -> Iterator[Postgres]:
    """A Postgres server of this test's own, which it may stop and start again."""
    with postgres_server() as server:
        yield server
