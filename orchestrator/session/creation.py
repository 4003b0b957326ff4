"""A new session's directory: its manifest, its empty journal, its workspace when it
keeps one inside, a scripted model's script, and the settings it was made with."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.errors import SessionError
from orchestrator.session.replay import JOURNAL
from orchestrator.state.mailbox import MAIN
from orchestrator.state.manifest import Manifest, now_stamp, write_manifest
from orchestrator.state.settings import SessionSettings, SettingsChosen
from orchestrator.store import new_session_id, session_dir
from orchestrator.store.append import append_batch


def create_session(
    root: Path | str,
    *,
    goal: str,
    model: str,
    workspace: Path | None,
    now: datetime | None = None,
    settings: SessionSettings | None = None,
    source: str = "library",
) -> tuple[str, Path]:
    """Make a new session directory. A scripted model's script is copied in, and with
    `workspace=None` the workspace is `workspace/` inside the session: such a session is
    relocatable (copy it under any sessions root and resume it). `settings`, chosen by
    `source`, are its journal's first record (docs/session-format.md); without them, the
    first `drive` journals its own."""
    root, now = Path(root), now or datetime.now(UTC)
    session_id = new_session_id(now)
    directory = session_dir(root, session_id)
    try:
        # Private to the user: transcripts hold source code and command output.
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        directory.mkdir(mode=0o700)
    except OSError as exc:
        raise SessionError(
            f"cannot make a session under {root}: {exc.strerror or exc} "
            "(choose another place with --sessions-dir)"
        ) from None
    try:
        model = _fill_session(
            directory, session_id, goal=goal, model=model, workspace=workspace, now=now
        )
        if settings is not None:
            record = SettingsChosen(agent=MAIN, settings=settings, source=source)
            append_batch(directory / JOURNAL, [(record.kind, record.agent, record.journal_body())])
    except OSError as exc:
        shutil.rmtree(directory, ignore_errors=True)  # no half-made session left behind
        raise SessionError(f"cannot make a session in {directory}: {exc.strerror or exc}") from None
    return session_id, directory


def _fill_session(
    directory: Path,
    session_id: str,
    *,
    goal: str,
    model: str,
    workspace: Path | None,
    now: datetime,
) -> str:
    prefix, _, rest = model.partition(":")
    if prefix == "scripted":
        shutil.copyfile(rest, directory / "script.json")
        (directory / "script.json").chmod(0o600)
        model = "scripted:script.json"
    # Made (empty) before the manifest: the fsync of the directory that makes the
    # manifest's name durable makes the journal's too, and opening it syncs nothing.
    (directory / JOURNAL).touch(mode=0o600, exist_ok=False)
    if workspace is None:
        (directory / "workspace").mkdir(mode=0o700)
        shown = "workspace"
    else:
        shown = str(workspace.resolve())
    stamp = now_stamp(now)  # the id's time, to the microsecond
    write_manifest(
        directory,
        Manifest(
            id=session_id, goal=goal, model=model, workspace=shown, created=stamp, updated=stamp
        ),
    )
    return model
