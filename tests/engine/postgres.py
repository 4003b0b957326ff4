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


@contextlib.contextmanager
def server(*, durable: bool = False) -> Iterator[str]:
    """A fresh Postgres server for the block: its URL (user `postgres`, no password,
    loopback only). Not `durable` (the tests'): `fsync=off`, which a test's throw-away
    cluster does not need; `durable` (a benchmark's): Postgres's defaults, every commit
    flushed to disk. Raises `LookupError` with `missing()`'s reason when there is none."""
    found = bindir()
    if found is None:
        raise LookupError(missing())
    base = Path(tempfile.mkdtemp(prefix="orchestrator-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.chown(base, nobody.pw_uid, nobody.pw_gid)
        as_user = ["runuser", "-u", "nobody", "--"]
    data, port = base / "data", _free_port()
    options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1"
    if not durable:
        options += " -c fsync=off"

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
            found / "initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"
        )
        run(found / "pg_ctl", "-D", data, "-l", base / "server.log", "-o", options, "-w", "start")
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            run(found / "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(base, ignore_errors=True)
