"""A real Postgres for the dbos engine's tests: `initdb` and `pg_ctl` of the newest
`/usr/lib/postgresql/*/bin` (Debian's layout; `.ci/run` installs `postgresql-15` where it
is missing), in a temporary directory, listening on a free loopback port, run as an
unprivileged user (`nobody`) when the tests run as root, since Postgres refuses root. A
machine without it skips the tests that need it, saying why."""

from __future__ import annotations

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


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a fresh Postgres server (user `postgres`, no password, loopback only)
    that lives as long as the test session."""
    bindir = _bindir()
    if bindir is None:
        pytest.skip(f"no Postgres here (no {POSTGRES_BINS}/*/bin/initdb; .ci/run installs it)")
    base = Path(tempfile.mkdtemp(prefix="orchestrator-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.chown(base, nobody.pw_uid, nobody.pw_gid)
        as_user = ["runuser", "-u", "nobody", "--"]
    data, port = base / "data", _free_port()
    options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"

    def run(*command: str | Path) -> None:
        subprocess.run(
            [*as_user, *map(str, command)],
            check=True,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )

    try:
        run(
            bindir / "initdb",
            "-D",
            data,
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
        )
        run(bindir / "pg_ctl", "-D", data, "-l", base / "server.log", "-o", options, "-w", "start")
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            run(bindir / "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(base, ignore_errors=True)
