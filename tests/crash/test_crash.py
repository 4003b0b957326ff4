"""SIGKILL a running session at seeded random points, resume it, check the invariants.

Every `pytest` makes 20 kills; `pytest -m slow` (which `.ci/run` runs) makes 100.
`CRASH_POINTS` sets how many kills either makes; `CRASH_SEED` the seed. The long mode
is `CRASH_POINTS=1000 pytest -m slow tests/crash/test_crash.py`.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import orjson
import pytest

from tests.crash.harness import CrashRun, crash_script, sized, snapshot_workspace

STEPS = 40


@pytest.mark.parametrize("points", sized("CRASH_POINTS", 20, 100))
def test_sigkill_at_random_points_then_resume(tmp_path: Path, points: int) -> None:
    rng = random.Random(int(os.environ.get("CRASH_SEED", "20261123")))
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(crash_script(STEPS)))

    reference = CrashRun(tmp_path / "ref-sessions", script, tmp_path / "ref-ws", rng)
    reference.workspace.mkdir()
    assert reference.step(kill_after_events=None) == 0
    reference.check_final(snapshot_workspace(reference.workspace))
    expected = snapshot_workspace(reference.workspace)
    assert expected["counter.txt"] == f"count={STEPS // 4}\n"
    assert len(expected["effects.log"].splitlines()) == STEPS // 4

    kills = 0
    interrupted = tails_cut = 0
    round_number = 0
    while kills < points:
        round_number += 1
        run = CrashRun(
            tmp_path / f"sessions-{round_number}", script, tmp_path / f"ws-{round_number}", rng
        )
        run.workspace.mkdir()
        while kills < points:
            if run.step(kill_after_events=rng.randint(1, 80)) is not None:
                break
            kills += 1
            run.check_invariants()
        else:
            assert run.step(kill_after_events=None) == 0
        run.check_final(expected)
        interrupted += len(run.interrupted)
        tails_cut += run.tails_cut
    assert kills >= points
    print(
        f"{kills} kills in {round_number} sessions: {interrupted} calls interrupted, "
        f"{tails_cut} torn tails cut"
    )
