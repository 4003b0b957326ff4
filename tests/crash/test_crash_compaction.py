"""SIGKILL a session while it compacts, or just after, then resume: the checkpoint is
whole or absent, never half of one, and the session ends as the uninterrupted one did."""

from __future__ import annotations

import random
import signal
import subprocess
from pathlib import Path

import orjson
import pytest

from orchestrator import load_state
from orchestrator.session.live import JOURNAL
from orchestrator.store import scan_journal
from tests.crash.harness import CrashRun, crash_script, snapshot_workspace

STEPS = 40
WINDOW = {"context": 2_600}  # the crash script's main agent crosses it several times


class CompactionRun(CrashRun):
    def step_until(self, kind: str, occurrence: int) -> bool:
        """Run until the `occurrence`-th event of `kind` is printed, then SIGKILL the
        process; True if it was killed (False: it finished first)."""
        proc = self.start(stderr=subprocess.DEVNULL)
        assert proc.stdout is not None
        seen = 0
        killed = False
        for line in proc.stdout:
            event = orjson.loads(line)
            if event["kind"] == "tool_call_started" and not event["idempotent"]:
                self.durable_starts.add(event["ref"])
            if event["kind"] == kind:
                seen += 1
                if seen == occurrence:
                    proc.send_signal(signal.SIGKILL)
                    killed = True
                    break
        proc.wait(timeout=self.hang_after)
        proc.stdout.close()
        if not self.session_id:
            [self.session_id] = [p.name for p in self.sessions.iterdir() if p.is_dir()]
        if killed:
            self.kills += 1
        return killed


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_bytes(orjson.dumps({**crash_script(STEPS), "window": WINDOW}))
    return path


def compactions(run: CrashRun) -> list[dict[str, object]]:
    scan = scan_journal(run.sessions / run.session_id / JOURNAL)
    return [f.fields() for f in scan.records if f.fields()["k"] == "context_compacted"]


@pytest.mark.parametrize(
    ("kind", "occurrence"),
    [("compaction_started", 1), ("compaction_started", 3), ("context_compacted", 2)],
)
def test_sigkill_during_a_compaction_then_resume(
    tmp_path: Path, script: Path, kind: str, occurrence: int
) -> None:
    rng = random.Random(7)
    reference = CrashRun(tmp_path / "ref-sessions", script, tmp_path / "ref-ws", rng)
    reference.workspace.mkdir()
    assert reference.step(kill_after_events=None) == 0
    expected = snapshot_workspace(reference.workspace)
    assert len(compactions(reference)) >= 3, "the script must compact several times"

    run = CompactionRun(tmp_path / "sessions", script, tmp_path / "ws", rng)
    run.workspace.mkdir()
    assert run.step_until(kind, occurrence), "the session ended before the kill"
    run.check_invariants()
    before = compactions(run)
    if kind == "compaction_started":  # the checkpoint is one record: whole, or not there
        assert len(before) in (occurrence - 1, occurrence)
    state = load_state(run.sessions / run.session_id, warn=lambda _: None)
    assert state.agents["main"].compactions == len(before)
    assert run.step(kill_after_events=None) == 0
    run.check_final(expected)
    after = compactions(run)
    assert after[: len(before)] == before
    assert len(after) >= len(compactions(reference)) - 1
