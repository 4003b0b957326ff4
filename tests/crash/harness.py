"""A crash harness: run a session in a real subprocess, SIGKILL it at seeded random
points, resume it, and check what must hold after every kill.

The session's script mixes side effects of every kind: `shell` appends a line to
`effects.log` (not idempotent: a repeat would show as a duplicate line), `write_file`
(idempotent), `edit_file` that bumps a counter (not idempotent), and read-only calls
that run concurrently.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator import ToolResult, load_state
from orchestrator.session.live import JOURNAL
from orchestrator.store import scan_journal


def sized(variable: str, quick: int, full: int) -> list[Any]:
    """A harness's size (kills, points) as two parameters: `quick`, which every `pytest`
    runs, and `full`, marked `slow` (`pytest -m slow`, which `.ci/run` runs too). The
    environment variable `variable`, when set, is the size of both."""
    given = os.environ.get(variable)
    if given:
        quick = full = int(given)
    return [pytest.param(quick, id="quick"), pytest.param(full, id="full", marks=pytest.mark.slow)]


def seeded(variable: str, default: str, quick: int) -> list[Any]:
    """A harness's seeds as parameters: the first `quick` in every run, the others marked
    `slow`. The environment variable `variable` (comma-separated) replaces `default`."""
    seeds = [int(s) for s in os.environ.get(variable, default).split(",") if s]
    return [
        pytest.param(seed, marks=() if n < quick else pytest.mark.slow)
        for n, seed in enumerate(seeds)
    ]


def crash_script(steps: int) -> dict[str, Any]:
    replies: list[dict[str, Any]] = [
        {
            "text": "Setting up.",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "counter.txt", "content": "count=0\n"}}
            ],
        }
    ]
    for i in range(1, steps + 1):
        match i % 4:
            case 0:
                calls = [
                    {
                        "name": "shell",
                        "arguments": {"command": f"sleep 0.01; echo effect-{i} >> effects.log"},
                    }
                ]
            case 1:
                calls = [
                    {
                        "name": "write_file",
                        "arguments": {"path": f"files/f{i}.txt", "content": f"file {i}\n" * 20},
                    }
                ]
            case 2:
                calls = [
                    {"name": "read_file", "arguments": {"path": "counter.txt"}},
                    {"name": "list_files", "arguments": {}},
                    {"name": "grep", "arguments": {"pattern": "count"}},
                ]
            case _:
                calls = [
                    {
                        "name": "edit_file",
                        "arguments": {
                            "path": "counter.txt",
                            "old_text": f"count={i // 4}\n",
                            "new_text": f"count={i // 4 + 1}\n",
                        },
                    }
                ]
        replies.append({"text": f"Step {i}.", "tool_calls": calls})
    replies.append({"text": "All steps done."})
    return {"version": 1, "agents": {"main": replies}}


def cli(*args: str, sessions: Path) -> list[str]:
    return [sys.executable, "-m", "orchestrator", *args, "--sessions-dir", str(sessions)]


def snapshot_workspace(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@dataclass
class CrashRun:
    """One session driven through kills and resumes until it completes."""

    sessions: Path
    script: Path
    workspace: Path
    rng: random.Random
    session_id: str = ""
    kills: int = 0
    durable_starts: set[str] = field(default_factory=set)
    previous_records: list[tuple[int, str]] = field(default_factory=list)
    interrupted: set[str] = field(default_factory=set)
    tails_cut: int = 0
    hang_after: float = 60.0  # seconds one process may run before the run counts as hung

    def start_command(self) -> list[str]:
        if not self.session_id:
            return cli(
                "run", "crash test", "--model", f"scripted:{self.script}",
                "-w", str(self.workspace), "--yes", "--json", "--max-rounds", "500",
                sessions=self.sessions,
            )  # fmt: skip
        return cli(
            "resume", self.session_id, "--yes", "--json", "--max-rounds", "500",
            sessions=self.sessions,
        )  # fmt: skip

    def start(self, stderr: int = subprocess.PIPE) -> subprocess.Popen[bytes]:
        """The process of the next step, its events on stdout."""
        return subprocess.Popen(
            self.start_command(),
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "NO_COLOR": "1"},
        )

    def step(self, kill_after_events: int | None) -> int | None:
        """Run until the process ends, or SIGKILL it after `kill_after_events` events.
        Returns the exit code, or None if it was killed. A process still running after
        `hang_after` seconds is killed and the run fails as hung."""
        proc = self.start()
        hung = threading.Event()

        def watchdog() -> None:
            hung.set()
            proc.kill()

        timer = threading.Timer(self.hang_after, watchdog)
        timer.start()
        killed = False
        try:
            assert proc.stdout is not None
            for seen, line in enumerate(proc.stdout, start=1):
                event = orjson.loads(line)
                if event["kind"] == "tool_call_started" and not event["idempotent"]:
                    # Printed after the journal made it durable (the journal sink is first).
                    self.durable_starts.add(event["ref"])
                if kill_after_events is not None and seen >= kill_after_events:
                    proc.send_signal(signal.SIGKILL)
                    killed = True
                    break
            proc.wait(timeout=self.hang_after)
            stderr = proc.stderr.read().decode() if proc.stderr else ""
        finally:
            timer.cancel()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        assert not hung.is_set(), f"a process hung for {self.hang_after:g} s:\n{stderr[-3000:]}"
        if not self.session_id:
            self.session_id = self._find_session_id(stderr)
            self.session_found()
        self.tails_cut += stderr.count("cut a torn tail")
        if killed:
            self.kills += 1
            return None
        assert proc.returncode == 0, stderr[-3000:]
        return proc.returncode

    def session_found(self) -> None:
        """Called once the session's id is known (a subclass may look inside it)."""

    def _find_session_id(self, stderr: str) -> str:
        ids = [p.name for p in self.sessions.iterdir() if p.is_dir()]
        assert len(ids) == 1, (ids, stderr)
        return ids[0]

    def check_invariants(self) -> None:
        directory = self.sessions / self.session_id
        scan = scan_journal(directory / JOURNAL)
        fields = [f.fields() for f in scan.records]
        records = [(f["seq"], f["k"]) for f in fields]
        # Nothing once durable is ever lost: the journal only grows past what it held.
        assert records[: len(self.previous_records)] == self.previous_records[: len(records)]
        assert len(records) >= len(self.previous_records) - 0
        self.previous_records = records
        started = {f["ref"] for f in fields if f["k"] == "call_started"}
        missing = self.durable_starts - started
        assert not missing, f"acknowledged durable starts lost: {missing}"
        # The session loads: the state folds without error.
        load_state(directory, warn=lambda _: None)
        self.interrupted |= interrupted_calls(fields)

    def check_final(self, expected: dict[str, str]) -> None:
        directory = self.sessions / self.session_id
        state = load_state(directory, warn=lambda _: None)
        assert state.status == "completed"
        for agent in state.agents.values():
            assert agent.pending_calls() == []
            calls = [c.id for m in agent.messages if m.role == "assistant" for c in m.tool_calls]  # type: ignore[union-attr]
            results = [m.call_id for m in agent.messages if isinstance(m, ToolResult)]
            assert sorted(calls) == sorted(results), "every call has exactly one result"
        # From the journal, not the fold: a later compaction may summarise the result away.
        self.interrupted |= interrupted_calls(
            [f.fields() for f in scan_journal(directory / JOURNAL).records]
        )
        actual = snapshot_workspace(self.workspace)
        effects = actual.pop("effects.log", "").splitlines()
        expected_effects = expected.get("effects.log", "").splitlines()
        assert len(effects) == len(set(effects)), f"a side effect ran twice: {effects}"
        # An interrupted call may or may not have taken effect; everything else must match.
        may_miss = {f"effect-{cid.split('_')[2]}" for cid in self.interrupted}
        assert set(effects) <= set(expected_effects)
        assert set(expected_effects) - set(effects) <= may_miss
        expected_rest = {k: v for k, v in expected.items() if k != "effects.log"}
        if any(cid for cid in self.interrupted):
            # An interrupted edit may have bumped the counter or not; the test script's
            # later edits then fail visibly, so compare only the files that are not edited.
            actual.pop("counter.txt", None)
            expected_rest.pop("counter.txt", None)
        assert actual == expected_rest


def interrupted_calls(records: list[dict[str, Any]]) -> set[str]:
    """The ids of the calls the journal `records` settled as `interrupted`: a result's
    ref is `SEQ.INDEX`, the INDEXth call of the reply journaled at SEQ."""
    calls = {
        f"{r['seq']}.{i}": call["id"]
        for r in records
        if r["k"] == "assistant_replied"
        for i, call in enumerate(r["message"].get("tool_calls", ()))
    }
    return {
        calls[r["ref"]]
        for r in records
        if r["k"] == "call_result" and r.get("status") == "interrupted" and r["ref"] in calls
    }
