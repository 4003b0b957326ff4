"""What a compaction keeps: a long session with planted facts (tests/benchmarks/
long_session.py: a goal, 20 todos in mixed states with blockers, 3 live subagent tasks
with progress, an open question and a message that waits for an answer, a correction from
the user, 5 file edits) compacts its main agent ten times; the first request the model
gets after the 1st, 3rd and 10th compaction shows every planted fact, checked
structurally (each todo's id with its status, each task's id with its state and latest
progress on one line, the texts verbatim, the paths)."""

from __future__ import annotations

import pytest
import trio

from orchestrator.team.queries import MAIN
from tests.benchmarks import long_session
from tests.benchmarks.long_session import Check, Scene


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Scene:
    """One session for every test here (it takes about a second)."""
    root = tmp_path_factory.mktemp("retention")
    scene = Scene(long_session.make_workspace(root / "ws"), long_session.filler, compactions=10)
    result = trio.run(scene.run, root / "sessions")
    assert result.status == "completed", result.detail
    return scene


def after(scene: Scene, compactions: int) -> Check:
    [check] = [c for c in scene.checks if c.compactions == compactions]
    return check


def test_the_facts_are_planted_and_still_live_at_every_compaction(scene: Scene) -> None:
    assert [c.compactions for c in scene.checks] == list(range(1, 11))
    for check in scene.checks:
        # The tasks were live when the request was checked: the anchors had to show them
        # as they stood, not as they ended.
        assert check.tasks == {"t1": "waiting_decision", "t2": "running", "t3": "running"}
        assert check.record.agent == MAIN
        assert check.record.method == "summary"
        assert check.record.after < check.record.before
        assert check.record.summary_chars > 0
    statuses = {status for _, _, status, _, _ in long_session.TODOS}
    assert statuses == {"completed", "in_progress", "pending", "cancelled", "failed"}
    assert sum(1 for *_, blocked_by, _ in long_session.TODOS if blocked_by) >= 5


@pytest.mark.parametrize("compactions", [1, 3, 10])
def test_the_next_request_after_a_compaction_shows_every_planted_fact(
    scene: Scene, compactions: int
) -> None:
    check = after(scene, compactions)
    assert check.missing == []


@pytest.mark.parametrize("compactions", [1, 3, 10])
def test_the_next_request_after_a_compaction_quotes_the_correction(
    scene: Scene, compactions: int
) -> None:
    assert long_session.CORRECTION in long_session.request_text(after(scene, compactions).request)
