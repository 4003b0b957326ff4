"""One live process per session: a second fails at once naming the first; death frees it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
import trio

from orchestrator.errors import SessionLocked
from orchestrator.store import LockHolder, SessionLock, lock_holder

CHILD = Path(__file__).with_name("lock_child.py")
SINCE = datetime(2026, 11, 23, 2, 53, 10, tzinfo=UTC)


async def start_holder(lock_path: Path) -> tuple[trio.Process, int]:
    """A child process that holds the lock; returns once it does."""
    command = [sys.executable, str(CHILD), str(lock_path)]
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert process.stdout is not None
    line = b""
    with trio.fail_after(30):
        while not line.endswith(b"\n"):
            chunk = await process.stdout.receive_some()
            assert chunk, "the child exited before taking the lock"
            line += chunk
    assert line.startswith(b"locked ")
    return process, int(line.split()[1])


async def kill(process: trio.Process) -> None:
    process.send_signal(signal.SIGKILL)
    with trio.fail_after(30):
        await process.wait()
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            await stream.aclose()


async def test_a_second_process_fails_at_once_and_takes_over_after_a_kill(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    process, pid = await start_holder(path)
    try:
        with pytest.raises(SessionLocked) as caught:
            SessionLock(path).acquire()
        error = caught.value
        assert (error.path, error.pid, error.host) == (path, pid, socket.gethostname())
        assert f"session {tmp_path} is in use by pid {pid}@{socket.gethostname()} since " in str(
            error
        )
        assert lock_holder(path) == LockHolder(pid, socket.gethostname(), error.since)
    finally:
        await kill(process)
    assert process.returncode == -signal.SIGKILL

    with SessionLock(path, now=lambda: SINCE) as lock:  # its flock died with it
        assert lock.held
        assert orjson.loads(path.read_bytes()) == {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": "2026-11-23T02:53:10+00:00",
        }


def test_a_second_lock_in_the_same_process_fails_too(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    with SessionLock(path) as lock:
        with pytest.raises(SessionLocked, match="in use by pid"):
            SessionLock(path).acquire()
        with pytest.raises(RuntimeError, match="already held"):
            lock.acquire()
    assert not lock.held
    assert path.read_bytes() == b""  # released: no holder named
    with SessionLock(path):
        pass


def test_lock_holder_names_the_holder_only_while_held(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    assert lock_holder(path) is None  # no file
    lock = SessionLock(path, now=lambda: SINCE)
    me = lock.acquire()
    try:
        assert me == LockHolder(os.getpid(), socket.gethostname(), SINCE)
        assert lock_holder(path) == me
    finally:
        lock.release()
    assert lock_holder(path) is None
    lock.release()  # a no-op


def test_an_unnamed_holder_is_still_reported(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    with SessionLock(path):
        path.write_bytes(b"")  # as if it had just taken the lock
        with pytest.raises(SessionLocked, match="not yet named") as caught:
            SessionLock(path).acquire()
        assert caught.value.pid is None
        assert lock_holder(path) == LockHolder(None, None, None)


async def test_a_child_process_does_not_inherit_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    lock = SessionLock(path)
    lock.acquire()
    # A long-running command started while we hold the lock (as a shell tool would).
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        lock.release()
        with SessionLock(path):  # free, though the child still runs
            assert process.returncode is None
    finally:
        await kill(process)


async def test_a_lock_held_by_the_fork_of_a_dead_holder_is_waited_for(tmp_path: Path) -> None:
    # The demo's kill can land as the shell tool forks: the fork holds the lock until it
    # execs. The named holder is dead, so the next acquire waits rather than failing.
    path = tmp_path / "lock"
    command = [sys.executable, str(CHILD), str(path), "--forked"]
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert process.stdin is not None
    assert process.stdout is not None
    with trio.fail_after(30):
        line = await process.stdout.receive_some()
        await process.wait()  # the named holder is gone; its fork holds on
    pid = int(line.split()[1])
    with pytest.raises(SessionLocked, match=f"in use by pid {pid}@"):
        SessionLock(path, wait=0.05).acquire()  # not released within the wait: held
    async with trio.open_nursery() as nursery:
        taken = trio.Event()

        async def take() -> None:
            lock = SessionLock(path, wait=60)
            holder = await trio.to_thread.run_sync(lock.acquire)
            assert holder.pid == os.getpid()
            lock.release()
            taken.set()

        nursery.start_soon(take)
        await process.stdin.aclose()  # the fork exits, and the lock is free
        with trio.fail_after(30):
            await taken.wait()
    await process.stdout.aclose()


async def test_a_live_holder_is_not_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    process, pid = await start_holder(path)
    try:
        with pytest.raises(SessionLocked, match=f"in use by pid {pid}@"):
            SessionLock(path, wait=3600).acquire()  # would hang if it waited
    finally:
        await kill(process)
