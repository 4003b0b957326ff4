"""The manifest, `session.json`: what a session is (goal, model, workspace) and where it
stands, for listing sessions without reading their journals. Light to import on purpose:
`sessions list` needs nothing more."""

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import msgspec
import orjson

from orchestrator.errors import JournalCorrupt, SessionError, SessionNotFound
from orchestrator.layout import FORMAT_VERSION as FORMAT_VERSION
from orchestrator.layout import LOCK as LOCK
from orchestrator.layout import MANIFEST
from orchestrator.store.snapshot import read_json, write_atomic

SessionStatus = Literal[
    "running", "completed", "failed", "interrupted", "blocked", "budget_exhausted"
]


class Manifest(msgspec.Struct, kw_only=True):
    """What `session.json` holds."""

    id: str
    format_version: int = FORMAT_VERSION
    goal: str
    model: str
    workspace: str
    created: str
    updated: str
    status: SessionStatus = "running"
    journal_seq: int = 0
    """The journal's last seq when the status was last written: a journal found shorter
    than this has lost records, and resuming it would repeat work (it is refused)."""
    journal_size: int = 0
    """The journal's length in bytes at `journal_seq` (0: not known, as in manifests
    written before it was kept). A journal of exactly this length holds no record the
    manifest has not seen, so `status` is the journal's; a longer one is read from here
    on for a later status (session/status.py)."""
    output: str = ""
    """The main agent's answer: the text of its last reply that has any, as of the end of
    its last turn ("" before one; what `RunResult.output` says), so that listing
    sessions reads no journal for it."""
    trace_id: str | msgspec.UnsetType = msgspec.UNSET
    """(format 14) The OpenTelemetry trace of the session, 32 hex digits, once a run of it
    was traced (docs/tracing.md): every later traced run continues that trace. Absent
    (never written) while no run has been."""
    parent: str = ""
    """(Format 14) The session this one was forked from ("" for one made afresh), and
    the seq of its journal the fork goes on from (`sessions fork`, docs/time-travel.md)."""
    parent_seq: int = 0

    def workspace_path(self, directory: Path) -> Path:
        """The workspace; a relative one lives inside the session directory."""
        path = Path(self.workspace)
        return path if path.is_absolute() else directory / path

    def model_spec(self, directory: Path) -> str:
        """The model spec, with a scripted model's relative path taken from the session."""
        prefix, _, rest = self.model.partition(":")
        if prefix == "scripted" and not Path(rest).is_absolute():
            return f"scripted:{directory / rest}"
        return self.model


def now_stamp(now: datetime | None = None) -> str:
    """A manifest's time: to the microsecond, so that sessions created in the same second
    sort by their creation (session/listing.py); older manifests have seconds."""
    return (now or datetime.now(UTC)).isoformat(timespec="microseconds")


def read_manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST
    if not directory.is_dir():
        raise SessionNotFound(f"no session {directory.name!r} under {directory.parent}")
    if not path.exists():
        raise SessionNotFound(f"no session at {directory} (no {MANIFEST})")
    try:
        manifest = msgspec.convert(read_json(path), Manifest)
    except (msgspec.ValidationError, orjson.JSONDecodeError) as exc:
        raise JournalCorrupt(f"{path}: not a valid session manifest: {exc}") from exc
    if manifest.format_version > FORMAT_VERSION:
        raise SessionError(
            f"{path}: session format {manifest.format_version} was written by a newer "
            f"orchestrator; this one reads formats up to {FORMAT_VERSION}"
        )
    return manifest


def write_manifest(
    directory: Path, manifest: Manifest, *, sync: bool = True, sync_rename: bool = True
) -> None:
    """Replace `session.json` atomically; with `sync`, durably (a copy brought up to the
    journal needs no fsync: lost, it is derived again); `sync_rename` as `write_atomic`'s."""
    fields = msgspec.to_builtins(manifest)
    if not manifest.parent:  # (only a fork's manifest names a parent)
        del fields["parent"], fields["parent_seq"]
    data = orjson.dumps(fields, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    write_atomic(directory / MANIFEST, data, sync=sync, sync_rename=sync_rename)
