"""The time-travel records fold into `checkpoints`, which the snapshot keeps: the last
checkpoint, a restore begun until it is done, the fork link; and a fork's own link drops
a restore its parent had begun at the point."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from orchestrator.errors import SessionError
from orchestrator.session.fork import fork
from orchestrator.session.live import create_session
from orchestrator.state.checkpoints import (
    Checkpoints,
    SessionForked,
    WorkspaceCheckpointed,
    WorkspaceRestored,
    WorkspaceRestoring,
)
from orchestrator.state.events import decode_record
from orchestrator.state.fold import SessionState
from orchestrator.state.settings import SessionSettings
from orchestrator.state.snapshot import decode_snapshot


def folded(*records: object) -> SessionState:
    state = SessionState()
    for seq, record in enumerate(records, 1):
        line = msgspec.json.encode(record)
        state.apply(seq, decode_record(line))  # (as a journal line reads back)
    return state


def test_a_checkpoint_a_restore_begun_and_done() -> None:
    begun = folded(
        WorkspaceCheckpointed(agent="t1", tree="a" * 40, ref="3.0"),
        WorkspaceRestoring(agent="main", tree="b" * 40, point=2, workspace="workspace"),
    )
    assert begun.checkpoints == Checkpoints(
        tree="a" * 40,
        seq=1,
        restoring="b" * 40,
        restoring_point=2,
        restoring_into="workspace",
    )
    snapshot = decode_snapshot(begun.snapshot_json(None))
    assert SessionState.from_snapshot(snapshot).checkpoints == begun.checkpoints
    done = folded(
        WorkspaceCheckpointed(agent="t1", tree="a" * 40, ref="3.0"),
        WorkspaceRestoring(agent="main", tree="b" * 40, point=2),
        WorkspaceRestored(agent="main", tree="b" * 40),
    )
    assert done.checkpoints == Checkpoints(tree="b" * 40, seq=3)


def test_a_fork_drops_a_restore_its_parent_had_begun() -> None:
    state = folded(
        WorkspaceRestoring(agent="main", tree="b" * 40, point=2),
        SessionForked(agent="main", parent="20261129T000000-abcdef", at=1, workspace="none"),
    )
    assert state.checkpoints == Checkpoints(parent="20261129T000000-abcdef", parent_seq=1)


def test_a_session_whose_tasks_ran_on_workers_is_not_forked(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    settings = SessionSettings(engine="dbos", engine_workers=True)
    session_id, _ = create_session(
        root, goal="g", model="object:x", workspace=tmp_path, settings=settings, source="run"
    )
    with pytest.raises(SessionError, match="ran its tasks on workers"):
        fork(root, session_id, 1, "none")
    assert [p.name for p in root.iterdir()] == [session_id]  # nothing made, nothing hidden
