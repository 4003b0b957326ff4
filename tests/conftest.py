from __future__ import annotations

import contextlib
import ipaddress
import os
import pty
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import (
    AgentContext,
    AgentStarted,
    FanOut,
    ListSink,
    MemorySession,
    ScriptedModel,
    SystemMessage,
    UserMessage,
)
from orchestrator.agent import TurnDeps, run_turn
from orchestrator.tools import ToolContext, ToolRegistry, Workspace, workspace_tools

# `--by-file` (tests/progress.py): the line per test file `make test` prints.
pytest_plugins = ("tests.progress", "pytester")

# pytest-xdist's workers inherit COLUMNS and LINES of the terminal `make test` runs in;
# the programs the terminal tests start must measure their own pseudo-terminal instead.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)

_real_connect = socket.socket.connect


def _loopback_only(sock: socket.socket, address: Any) -> None:
    host = address[0] if isinstance(address, tuple) else None
    if (
        sock.family in (socket.AF_INET, socket.AF_INET6)
        and host is not None
        and not ipaddress.ip_address(host.split("%")[0]).is_loopback
    ):
        raise AssertionError(f"a test tried to reach {address}: only loopback is allowed")
    _real_connect(sock, address)


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection to a host other than 127.0.0.1 / ::1 fails the test: no test may
    call a real model (the provider tests use servers on loopback)."""
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    return Workspace(root)


MakeDeps = Callable[..., tuple[AgentContext, TurnDeps, ListSink]]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A workspace of four files, f0.txt to f3.txt, of 3,500 characters each: a few reads
    fill a small window (the compaction tests', a plain agent's recall)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for index in range(4):
        (workspace / f"f{index}.txt").write_text(f"line {index}\n" * 500)
    return workspace


@pytest.fixture
def make_deps(workspace: Workspace) -> MakeDeps:
    def make(
        model: ScriptedModel, tools: ToolRegistry | None = None, **kwargs: Any
    ) -> tuple[AgentContext, TurnDeps, ListSink]:
        sink = ListSink()
        session = MemorySession()
        messages = (SystemMessage(content="system"), UserMessage(content="goal"))
        session.state.apply(1, AgentStarted(agent="main", role="main", messages=messages))
        deps = TurnDeps(
            model=model,
            tools=tools if tools is not None else workspace_tools(),
            context=ToolContext(workspace=workspace),
            events=FanOut([session, sink]),
            **kwargs,
        )
        return session.state.agents["main"], deps, sink

    return make


async def final_text(state: AgentContext, deps: TurnDeps) -> str:
    """The text of the final reply of a turn (`run_turn`), which must end with one."""
    outcome = await run_turn(state, deps)
    assert outcome.final is not None, outcome
    return outcome.final.text


def run_on_terminal(args: list[str], typed: bytes) -> subprocess.CompletedProcess[str]:
    """`orchestrator ARGS` with a pseudo-terminal on stdin, `typed` already waiting on it
    (answers typed ahead), stdout and stderr captured."""
    master, slave = pty.openpty()
    try:
        os.write(master, typed)
        return subprocess.run(
            [sys.executable, "-m", "orchestrator", *args],
            stdin=slave,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "NO_COLOR": "1"},
        )
    finally:
        os.close(master)
        os.close(slave)


@contextlib.contextmanager
def waiting_on_terminal(args: list[str], until: bytes) -> Iterator[subprocess.Popen[bytes]]:
    """`orchestrator ARGS` with a pseudo-terminal on stdin that nobody types on and stderr
    a pipe, given once its stderr says `until` (a question it waits on); killed if still
    running, and its terminal closed, on the way out."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *args],
        stdin=slave,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        assert proc.stderr is not None
        seen = b""
        while until not in seen:
            chunk = os.read(proc.stderr.fileno(), 4096)
            assert chunk, seen.decode()
            seen += chunk
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()
        os.close(master)
        os.close(slave)
