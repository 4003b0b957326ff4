"""Time travel's records (format 14): workspace checkpoints, restores, and the fork link.

- `workspace_checkpoint`: the workspace's files were captured into the session's store
  (session/shadow.py) as checkpoint `tree`, after the call `ref` of its agent, at a
  run's start, or before a restore; `left_out` names what the caps kept out.
- `workspace_restoring`: a restore of checkpoint `tree` into the workspace is about to
  begin (journaled durably first, so a kill during it is finished by the same command
  or the next resume); `workspace_restored`: it is done.
- `session_forked`: this session's journal up to here is session `parent`'s up to seq
  `at` (the first record after the copied prefix).

`Checkpoints` is their fold: the last checkpoint, a restore begun and not finished, and
where the session was forked from.
"""

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from orchestrator.eventbase import EventBase

CheckpointWhy = Literal["call", "start", "restore", "end"]
ForkWorkspace = Literal["copy", "here", "none"]


class WorkspaceCheckpointed(EventBase, frozen=True, tag="workspace_checkpoint"):
    """Record: the workspace was captured as checkpoint `tree` (its id in the session's
    store), `why`: after the call `ref` of `agent` (`call`), as a run started
    (`start`), before a restore (`restore`), or as the main agent's work ended (`end`);
    `left_out`: the paths the caps kept out (each with why, one line)."""

    tree: str
    why: CheckpointWhy = "call"
    ref: str = ""
    left_out: tuple[str, ...] = ()


class WorkspaceRestoring(EventBase, frozen=True, tag="workspace_restoring"):
    """Record: the workspace at `workspace` is being made checkpoint `tree` (the point
    `point`'s), journaled durably before any file is touched."""

    tree: str
    point: int = 0
    workspace: str = ""


class WorkspaceRestored(EventBase, frozen=True, tag="workspace_restored"):
    """Record: the restore of checkpoint `tree` is done."""

    tree: str


class SessionForked(EventBase, frozen=True, tag="session_forked"):
    """Record: the journal before this record is session `parent`'s up to seq `at`; the
    workspace was `workspace` (`copy`: restored into a new directory, `here`: into the
    parent's, `none`: left as it was)."""

    parent: str
    at: int
    workspace: ForkWorkspace = "none"


CheckpointRecords = WorkspaceCheckpointed | WorkspaceRestoring | WorkspaceRestored | SessionForked


class Checkpoints(msgspec.Struct):
    """The fold of the records above: the last checkpoint (`tree`, at `seq`), a restore
    begun and not finished (`restoring`, its tree; `restoring_point`; "" for none), and
    the fork link (`parent`, `parent_seq`; "" and 0 for a session made afresh)."""

    tree: str = ""
    seq: int = 0
    restoring: str = ""
    restoring_point: int = 0
    restoring_into: str = ""
    parent: str = ""
    parent_seq: int = 0


def _checkpointed(checkpoints: Checkpoints, seq: int, record: WorkspaceCheckpointed) -> None:
    checkpoints.tree = record.tree
    checkpoints.seq = seq


def _restoring(checkpoints: Checkpoints, seq: int, record: WorkspaceRestoring) -> None:
    checkpoints.restoring = record.tree
    checkpoints.restoring_point = record.point
    checkpoints.restoring_into = record.workspace


def _restored(checkpoints: Checkpoints, seq: int, record: WorkspaceRestored) -> None:
    checkpoints.restoring = ""
    checkpoints.restoring_point = 0
    checkpoints.restoring_into = ""
    # The workspace is this checkpoint now.
    checkpoints.tree = record.tree
    checkpoints.seq = seq


def _forked(checkpoints: Checkpoints, seq: int, record: SessionForked) -> None:
    checkpoints.parent = record.parent
    checkpoints.parent_seq = record.at
    # A restore the parent had begun at the point is the parent's: the fork's own
    # workspace is what its own records say.
    checkpoints.restoring = ""
    checkpoints.restoring_point = 0
    checkpoints.restoring_into = ""


CHECKPOINT_FOLDS: dict[type, Callable[[Checkpoints, int, Any], None]] = {
    WorkspaceCheckpointed: _checkpointed,
    WorkspaceRestoring: _restoring,
    WorkspaceRestored: _restored,
    SessionForked: _forked,
}
