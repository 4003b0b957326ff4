"""Starting a shell command's process so that it dies with orchestrator, however
orchestrator ends (a SIGKILL included).

The kernel's tie is `PR_SET_PDEATHSIG`: a signal to the child when its parent dies. Its
"parent" is the *thread* that started it, so the processes are started from one thread
that lives as long as orchestrator (`Spawner`), never from trio's worker threads (which
end after ten idle seconds, and would take the child with them). The sandbox's helper
sets the signal for itself and its PID 1 (sandbox_exec.py); an unsandboxed command gets
it from `setpriv` (util-linux), then checks, as its first act, that its parent is still
orchestrator: one that died before the signal was set is seen that way.

Where there is no `pidfd_open` (not Linux), commands start as trio starts them, and
nothing ties them to orchestrator."""

from __future__ import annotations

import functools
import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Protocol

import trio


class Started(Protocol):
    """A started command, as the shell tool uses it (`trio.Process` is one)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    @property
    def stdout(self) -> trio.abc.ReceiveStream | None: ...

    async def wait(self) -> int: ...


class Child:
    """A process started by the `Spawner`: waited for through its pidfd."""

    def __init__(self, popen: subprocess.Popen[bytes], stdout: trio.lowlevel.FdStream) -> None:
        self._popen = popen
        self._pidfd = os.pidfd_open(popen.pid)
        self.pid = popen.pid
        self.stdout: trio.abc.ReceiveStream | None = stdout

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        if self._popen.returncode is None:
            await trio.lowlevel.wait_readable(self._pidfd)
            self._popen.wait()  # exited: reaps at once
            os.close(self._pidfd)
        return self._popen.returncode


class Spawner:
    """One thread, living as long as the process, that starts the commands."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], object], Future[object]]]
        self._jobs = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="orchestrator-spawner", daemon=True).start()

    def _serve(self) -> None:
        while True:
            job, future = self._jobs.get()
            try:
                future.set_result(job())
            except BaseException as exc:  # (handed to the caller)
                future.set_exception(exc)

    def submit(self, job: Callable[[], object]) -> Future[object]:
        future: Future[object] = Future()
        self._jobs.put((job, future))
        return future


@functools.cache
def spawner() -> Spawner:
    return Spawner()


def tied(argv: Sequence[str]) -> list[str]:
    """`argv` (an unsandboxed `/bin/sh -c COMMAND`) run so that it dies with this process:
    through `setpriv --pdeathsig KILL`, then a shell that goes on only if its parent is
    still this process. As it is where there is no `setpriv`."""
    setpriv = _setpriv()
    if setpriv is None:
        return list(argv)
    guard = f'[ "$PPID" = {os.getpid()} ] || exit 137; exec "$@"'
    return [setpriv, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", guard, "/bin/sh", *argv]


@functools.cache
def _setpriv() -> str | None:
    found = shutil.which("setpriv", path="/usr/bin:/bin:/usr/sbin:/sbin")
    if found is None:
        return None
    done = subprocess.run(
        [found, "--pdeathsig", "KILL", "--", "true"], capture_output=True, check=False
    )
    return found if done.returncode == 0 else None  # (an old one has no --pdeathsig)


async def spawn(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], pass_fds: Sequence[int]
) -> Started:
    """`argv` started in a session of its own, its stdin empty, its stdout and stderr one
    pipe (`stdout`), `pass_fds` inherited; from the `Spawner` where there are pidfds."""
    if not hasattr(os, "pidfd_open"):  # pragma: no cover - Linux has it
        return await trio.lowlevel.open_process(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    read, write = os.pipe()
    try:
        job = functools.partial(
            subprocess.Popen,
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=write,
            stderr=write,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
        future = spawner().submit(job)
        with trio.CancelScope(shield=True):  # (started, it is ours to stop)
            popen = await trio.to_thread.run_sync(future.result)
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    assert isinstance(popen, subprocess.Popen)
    return Child(popen, trio.lowlevel.FdStream(read))
