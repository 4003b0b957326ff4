"""The sessions under a root, newest first, each as a `SessionInfo`: what `orchestrator
sessions list` prints and `orc.list_sessions` returns. Read from the manifests alone (and a
journal's end where a kill left a manifest behind: session/status.py), so listing a
thousand sessions costs a thousand small reads.

Newest first means by creation time: the manifest's `created` (to the microsecond since
format 8's manifests carry it; to the second before). Ids name the second only, and two
sessions of the same second sorted by their random suffix, so `resume --last` could pick
the older. Sessions created in the same second as far as their manifests say are told
apart by their journals' first record (milliseconds), then by id; a session whose
manifest cannot be read is taken as created at the time in its id."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import msgspec
import orjson

from orchestrator.errors import ConfigError, SessionNotFound
from orchestrator.layout import FORMAT_VERSION, JOURNAL, MANIFEST
from orchestrator.session.status import ShownStatus, current_status, resumable
from orchestrator.state.manifest import Manifest
from orchestrator.store.ids import (
    is_session_id,
    session_dir,
    session_id_time,
    validate_session_id,
)

_PIECE = re.compile(r"[0-9A-Za-z-]{1,22}")  # what may be the start of an id


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One session as the listing shows it.

    `status` is the journal's, but `stopped (resumable)` for a session left `running` by
    a process that is gone, and `unreadable` for a manifest that cannot be read (`error`
    says why; `created` is then the time in its id, and the rest is empty)."""

    id: str
    directory: Path
    status: ShownStatus | Literal["unreadable"]
    resumable: bool
    """A resume would run something now: not completed, and no process holds it."""
    goal: str
    created: datetime
    model: str = ""
    workspace: Path | None = None
    size: int = 0
    """The bytes of the session's own files (a workspace inside it is not counted)."""
    error: str = ""
    output: str = ""
    """The main agent's answer as of its last turn's end (the manifest's `output`)."""


def session_ids(root: Path) -> list[str]:
    """The ids of the session directories under `root`, newest created first; anything
    else there (a directory without a manifest, a file) is not a session."""
    found = _session_names(root)
    return newest_first(root, {session_id: _created(root / session_id) for session_id in found})


def _session_names(root: Path) -> list[str]:
    """The session directories under `root`, in no order (no manifest is read)."""
    if not root.is_dir():
        return []
    return [p.name for p in root.iterdir() if is_session_id(p.name) and (p / MANIFEST).exists()]


def find_session(root: Path, given: str | None, *, last: bool = False) -> str:
    """The session a command names: the newest (`last`), or `given`: an id, the start of
    one, or its random part (what follows the `-`), when exactly one session under `root`
    has it. Raises `ConfigError` for both or neither, or for a start several ids share;
    `SessionNotFound` for one no session has; `InvalidSessionId` for what is no id."""
    if last == bool(given):
        raise ConfigError("give a session ID (or the start of one) or --last, not both")
    if last or given is None:
        return latest_session_id(root)
    if is_session_id(given):
        return given
    if not _PIECE.fullmatch(given):
        validate_session_id(given)  # raises, naming what a session id looks like
    names = _session_names(root)
    found = sorted(i for i in names if i.startswith(given) or i.partition("-")[2] == given)
    if len(found) == 1:
        return found[0]
    if not found:
        raise SessionNotFound(f"no session under {root} has an id that starts with {given!r}")
    shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
    raise ConfigError(f"{given!r} starts {len(found)} session ids ({shown}): give more of it")


def latest_session_id(root: Path) -> str:
    """The session created last under `root` (what `--last` picks)."""
    ids = session_ids(root)
    if not ids:
        raise SessionNotFound(f"no sessions under {root}")
    return ids[0]


def list_sessions(root: Path | str) -> list[SessionInfo]:
    """Every session under `root`, newest created first. A session whose manifest cannot
    be read is listed as `unreadable` with its `error`, never failing the listing."""
    root = Path(root)
    if not root.is_dir():
        return []
    infos = {
        p.name: session_info(p)
        for p in root.iterdir()
        if is_session_id(p.name) and (p / MANIFEST).exists()
    }
    order = newest_first(root, {session_id: info.created for session_id, info in infos.items()})
    return [infos[session_id] for session_id in order]


def newest_first(root: Path, created: dict[str, datetime]) -> list[str]:
    """The ids of `created` (each session's creation time), newest first: by time, then,
    among sessions of the same time, by their journal's first record, then by id."""
    ties: dict[datetime, int] = {}
    for moment in created.values():
        ties[moment] = ties.get(moment, 0) + 1

    def key(session_id: str) -> tuple[datetime, int, str]:
        moment = created[session_id]
        first = _first_record_time(root / session_id) if ties[moment] > 1 else 0
        return moment, first, session_id

    return sorted(created, key=key, reverse=True)


def _created(directory: Path) -> datetime:
    """The session's creation time from its manifest, or from its id when the manifest
    cannot be read."""
    try:
        created = orjson.loads((directory / MANIFEST).read_bytes())["created"]
        return _aware(datetime.fromisoformat(created))
    except (OSError, ValueError, KeyError, TypeError):
        return session_id_time(directory.name)


def _aware(moment: datetime) -> datetime:
    """A naive time (no manifest of ours has one) as UTC, so that times compare."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _first_record_time(directory: Path) -> int:
    """The time (Unix ms) of the journal's first record; 0 without a readable one."""
    try:
        with (directory / JOURNAL).open("rb") as journal:
            return int(orjson.loads(journal.readline())["t"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def session_info(directory: Path) -> SessionInfo:
    """The session in `directory` as the listing shows it. Its status is read through to
    the journal, and a manifest that a kill left behind is brought up to it when no
    process holds the session."""
    session_id = directory.name
    session_dir(directory.parent, session_id)  # (a session's id, or InvalidSessionId)
    try:
        fields = orjson.loads((directory / MANIFEST).read_bytes())
        manifest = msgspec.convert(fields, Manifest)
        created = _aware(datetime.fromisoformat(manifest.created))
    except FileNotFoundError:
        raise SessionNotFound(f"no session {session_id!r} under {directory.parent}") from None
    except (OSError, ValueError) as exc:  # (JSONDecodeError and ValidationError are ValueErrors)
        return SessionInfo(
            id=session_id,
            directory=directory,
            status="unreadable",
            resumable=False,
            goal="",
            created=session_id_time(session_id),
            error=f"{directory / MANIFEST} is not a readable manifest ({exc})",
        )
    status = current_status(directory, fields)
    newer = manifest.format_version > FORMAT_VERSION  # (this version cannot run it)
    return SessionInfo(
        id=session_id,
        directory=directory,
        status=status,
        resumable=not newer and resumable(directory, status),
        goal=manifest.goal,
        created=created,
        model=manifest.model,
        workspace=manifest.workspace_path(directory),
        size=sum(p.stat().st_size for p in directory.iterdir() if p.is_file()),
        output=manifest.output,
    )
