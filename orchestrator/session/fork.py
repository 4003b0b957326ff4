"""Fork a session at a point, and rewind one (docs/time-travel.md).

`fork` makes a new session whose journal is the parent's up to the point (whole batches:
any such prefix is a state a crash could have left, so resume revives its running tasks
and settles its open calls as after a crash), then a `session_forked` record naming the
parent and the point. The parent is only read: not its lock, not its store's index.

The workspace, by `workspace`:

- `copy`: the point's checkpoint is restored into a new directory, `workspace/` inside
  the fork (which is then relocatable);
- `here`: into the parent's workspace, after a checkpoint of it as it is (journaled in
  the fork, `why` `restore`: forking at that point undoes the rewind);
- `none`: the files are left as they are; the fork works on the parent's workspace.

Kills: the fork is made in a hidden directory (`.fork-<parent>-<point>-<id>`, never
listed) and renamed into place once its journal says what is to be restored
(`workspace_restoring`, durably); the restore comes after, then `workspace_restored`.
Killed before the rename, nothing is listed (the next fork of the same point clears
what was left); after it, the same command, or a resume of the fork, finishes the
restore.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from orchestrator.errors import SessionError, SessionNotFound
from orchestrator.layout import FORMAT_VERSION, JOURNAL, LOCK
from orchestrator.session.points import Point, session_points
from orchestrator.session.shadow import STORE, Shadow
from orchestrator.state.checkpoints import (
    ForkWorkspace,
    SessionForked,
    WorkspaceCheckpointed,
    WorkspaceRestored,
    WorkspaceRestoring,
)
from orchestrator.state.manifest import Manifest, now_stamp, read_manifest, write_manifest
from orchestrator.store import (
    JournalMark,
    SessionLock,
    is_session_id,
    new_session_id,
    scan_journal,
    session_dir,
)
from orchestrator.store._fs import sync_dir, write_all
from orchestrator.store.append import append_batch

HIDDEN = ".fork-"  # a fork being made: `.fork-<parent>-<point>-<id>` (never listed)
_MAIN = "main"


@dataclass(frozen=True)
class Forked:
    """A fork made (or finished): its id and directory, the parent's point, its
    workspace, the checkpoint restored ("" for none) and what the restore changed
    (`(A|M|D, path)`: added, modified, deleted, as `git diff-tree` says)."""

    session_id: str
    directory: Path
    parent: str
    point: int
    workspace: Path
    tree: str = ""
    changes: tuple[tuple[str, str], ...] = field(default=())
    finished: bool = False  # an earlier fork of the point, whose restore a kill cut short


def fork(
    root: Path,
    session_id: str,
    at: int,
    workspace: ForkWorkspace = "copy",
    *,
    now: datetime | None = None,
) -> Forked:
    """Fork session `session_id` under `root` at seq `at` (a point's; see `sessions
    points`). Raises `SessionError` with one clear line when it cannot."""
    parent_dir = session_dir(root, session_id)
    manifest = read_manifest(parent_dir)
    if manifest.format_version != FORMAT_VERSION:
        raise SessionError(
            f"session {session_id} is in format {manifest.format_version}: open it once "
            f"(orchestrator sessions verify {session_id}) to bring it to format "
            f"{FORMAT_VERSION}, then fork it"
        )
    pending = _unfinished(root, session_id, at, workspace)
    if pending is not None:
        return pending
    _clear_leftovers(root, session_id, at)
    scan = scan_journal(parent_dir / JOURNAL, mark=_snapshot_mark(parent_dir))
    lines = scan.lines
    if not 1 <= at <= len(lines):
        raise SessionError(
            f"no point {at} in session {session_id}: its journal has seqs 1-{len(lines)}"
        )
    if b',"more":1,"crc":"' in lines[at - 1]:
        raise SessionError(f"seq {at} of session {session_id} is inside a batch: fork at its end")
    # (the journal only grows: its first `at` lines are the ones just checked)
    size = sum(map(len, lines[:at])) + at
    with (parent_dir / JOURNAL).open("rb") as journal:
        prefix = journal.read(size)
    _refuse_workers(session_id, prefix)
    tree = _tree_at(prefix)
    if workspace != "none" and not tree:
        raise SessionError(
            f"session {session_id} has no workspace checkpoint at or before seq {at} (made "
            "before checkpoints, or without git): fork with --workspace none"
        )
    return _make(root, parent_dir, manifest, prefix, at, tree, workspace, now)


def rewind(root: Path, session_id: str, at: int | None = None) -> Forked:
    """Fork at `at` with the workspace restored here (`fork(..., "here")`); without `at`,
    at the last run's start (what that run did is undone)."""
    if at is None:
        starts = [p for p in session_points(session_dir(root, session_id)) if _run_start(p)]
        if not starts:
            raise SessionError(
                f"session {session_id} has no run start to rewind to: give --to POINT"
            )
        at = starts[-1].seq
    return fork(root, session_id, at, "here")


def _run_start(point: Point) -> bool:
    return point.kind == "checkpoint" and "as a run started" in point.summary


def _make(
    root: Path,
    parent_dir: Path,
    manifest: Manifest,
    prefix: bytes,
    at: int,
    tree: str,
    mode: ForkWorkspace,
    now: datetime | None,
) -> Forked:
    new_id = new_session_id(now or datetime.now(UTC))
    hidden = root / f"{HIDDEN}{manifest.id}-{at}-{new_id}"
    hidden.mkdir(mode=0o700)
    parent_workspace = manifest.workspace_path(parent_dir).resolve()
    model = manifest.model
    script = parent_dir / "script.json"
    if model == "scripted:script.json" and script.exists():
        shutil.copyfile(script, hidden / "script.json")
        (hidden / "script.json").chmod(0o600)
    if mode == "copy":
        (hidden / "workspace").mkdir(mode=0o700)
        shown, workspace = "workspace", hidden / "workspace"
    else:
        shown, workspace = str(parent_workspace), parent_workspace
    journal = hidden / JOURNAL
    fd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        write_all(fd, prefix)
    finally:
        os.close(fd)
    records: list[Any] = [SessionForked(agent=_MAIN, parent=manifest.id, at=at, workspace=mode)]
    changes: list[tuple[str, str]] = []
    shadow = Shadow(hidden / STORE, workspace)
    shadow.ensure()
    parent_store = parent_dir / STORE
    if (parent_store / "git").is_dir():
        shadow.share_objects_of(parent_store)
    if mode != "copy" and (parent_store / "index").exists():
        shutil.copyfile(parent_store / "index", shadow.index_file)
        behind = parent_store / shadow.behind_file.name  # (the index lags on that tree)
        if behind.exists():
            shutil.copyfile(behind, shadow.behind_file)
    if mode == "here":
        before = shadow.capture()  # the workspace as it is: the rewind can be undone
        records.append(
            WorkspaceCheckpointed(
                agent=_MAIN, tree=before.tree, why="restore", left_out=before.left_out
            )
        )
        changes = shadow.changes(before.tree, tree)
    if mode != "none":
        records.append(WorkspaceRestoring(agent=_MAIN, tree=tree, point=at, workspace=shown))
    items = [(r.kind, r.agent, r.journal_body()) for r in records]
    append_batch(journal, items, each=True, after=(at, len(prefix)))
    stamp = now_stamp(now)
    write_manifest(
        hidden,
        Manifest(
            id=new_id,
            goal=manifest.goal,
            model=model,
            workspace=shown,
            created=stamp,
            updated=stamp,
            parent=manifest.id,
            parent_seq=at,
        ),
    )
    directory = session_dir(root, new_id)
    os.rename(hidden, directory)  # listed from here on
    sync_dir(root)
    if mode == "copy":
        workspace = directory / "workspace"
    made = Forked(new_id, directory, manifest.id, at, workspace, tree, tuple(changes))
    return _restore(made) if mode != "none" else made


def _restore(forked: Forked) -> Forked:
    """Make the fork's workspace its checkpoint, and journal that it is done; run again
    after a kill, it finishes the job."""
    directory = forked.directory
    with SessionLock(directory / LOCK):
        shadow = Shadow(directory / STORE, forked.workspace)
        shadow.restore(forked.tree)
        done = WorkspaceRestored(agent=_MAIN, tree=forked.tree)
        append_batch(directory / JOURNAL, [(done.kind, done.agent, done.journal_body())])
    return forked


def _unfinished(root: Path, parent: str, at: int, mode: ForkWorkspace) -> Forked | None:
    """An earlier fork of the same point whose restore a kill cut short: finished, and
    returned (the same command run again finishes what it began)."""
    if mode == "none" or not root.is_dir():
        return None
    for directory in sorted(root.iterdir()):
        if not is_session_id(directory.name):
            continue
        try:
            manifest = read_manifest(directory)
        except (SessionError, SessionNotFound, OSError):
            continue
        if manifest.parent != parent or manifest.parent_seq != at:
            continue
        restoring = _pending_restore(directory, mode)
        if restoring is None:
            continue
        workspace = manifest.workspace_path(directory)
        forked = Forked(manifest.id, directory, parent, at, workspace, restoring, finished=True)
        return _restore(forked)
    return None


def _pending_restore(directory: Path, mode: ForkWorkspace) -> str | None:
    """The checkpoint whose restore the fork's journal began and did not finish, when it
    was forked with the workspace `mode`."""
    pending: str | None = None
    forked = ""
    for line in scan_journal(directory / JOURNAL).lines:
        if b'"k":"session_forked"' in line:  # (a restore the parent began is not ours)
            forked, pending = orjson.loads(line).get("workspace", "none"), None
        elif b'"k":"workspace_restor' in line:
            record = orjson.loads(line)
            pending = record["tree"] if record["k"] == "workspace_restoring" else None
    return pending if forked == mode else None


def _clear_leftovers(root: Path, parent: str, at: int) -> None:
    """Remove what a fork of this point killed before it was listed left behind."""
    if not root.is_dir():
        return
    for hidden in root.glob(f"{HIDDEN}{parent}-{at}-*"):  # (named so from its mkdir on)
        shutil.rmtree(hidden, ignore_errors=True)


def _tree_at(prefix: bytes) -> str:
    """The workspace checkpoint in force at the prefix's end."""
    found = max(
        prefix.rfind(b'"k":"workspace_checkpoint"'), prefix.rfind(b'"k":"workspace_restored"')
    )
    return str(orjson.loads(_line_at(prefix, found))["tree"]) if found >= 0 else ""


def _refuse_workers(session_id: str, prefix: bytes) -> None:
    """A session whose tasks ran on workers keeps their journals in the engine's
    database, which a fork would not carry: refused, saying so."""
    found = prefix.rfind(b'"k":"settings"')
    if found < 0:
        return
    settings = orjson.loads(_line_at(prefix, found)).get("settings", {})
    if settings.get("engine_workers"):
        raise SessionError(
            f"session {session_id} ran its tasks on workers (--engine dbos --workers): "
            "their journals are in the engine's database, which a fork does not copy"
        )


def _line_at(data: bytes, offset: int) -> bytes:
    """The whole line of `data` that holds `offset`."""
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    return data[start : end if end >= 0 else len(data)]


def _snapshot_mark(directory: Path) -> JournalMark | None:
    """The journal's mark the snapshot names: the prefix it covers is then checked by
    one CRC, as a resume checks it (a mark the file does not hold is no harm: every line
    is checked then)."""
    try:
        mark = orjson.loads((directory / "snapshot.json").read_bytes()).get("journal")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return None
    if isinstance(mark, list) and len(mark) == 3 and all(isinstance(v, int) for v in mark):
        return JournalMark(*mark)
    return None
