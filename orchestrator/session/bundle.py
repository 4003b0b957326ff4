"""A session as one portable JSON file, and back (`sessions export --format json`,
`sessions import`; docs/time-travel.md).

The bundle holds the manifest, the journal's bytes, the snapshot, a scripted model's
script, and the workspace checkpoints (the store's objects, a fork's parent's included,
as a gzipped tar); the workspace's files only when asked (`with_files`: they are not
redacted, a `.env` that `.gitignore` does not name is in them). Importing checks the
journal (`verify`) before the session is listed, under its own id if that is free, else
a new one; made in a hidden directory and renamed into place, so a kill leaves nothing
listed.
"""

from __future__ import annotations

import base64
import io
import os
import shutil
import tarfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import orjson

from orchestrator.errors import SessionError
from orchestrator.layout import FORMAT_VERSION, JOURNAL
from orchestrator.session.check import verify
from orchestrator.session.shadow import STORE, Shadow
from orchestrator.state.manifest import Manifest, read_manifest, write_manifest
from orchestrator.store import new_session_id, session_dir

KIND = "orchestrator-session"
VERSION = 1
SNAPSHOT = "snapshot.json"
SCRIPT = "script.json"


def export_bundle(directory: Path, *, with_files: bool = False) -> bytes:
    """The session in `directory` as a bundle's bytes (JSON)."""
    manifest = read_manifest(directory)
    bundle: dict[str, Any] = {
        "kind": KIND,
        "version": VERSION,
        "manifest": msgspec.to_builtins(manifest),
        "journal": (directory / JOURNAL).read_bytes().decode(),
    }
    for key, name in (("snapshot", SNAPSHOT), ("script", SCRIPT)):
        if (directory / name).exists():
            bundle[key] = (directory / name).read_bytes().decode()
    objects = _objects(directory / STORE / "git" / "objects")
    if objects:
        bundle["checkpoints"] = _tar({f"objects/{rel}": path for rel, path in objects.items()})
    if with_files:
        workspace = manifest.workspace_path(directory)
        found = {p.relative_to(workspace).as_posix(): p for p in sorted(workspace.rglob("*"))}
        bundle["files"] = _tar({rel: p for rel, p in found.items() if p.is_file()})
    return orjson.dumps(bundle)


@dataclass(frozen=True)
class Imported:
    session_id: str
    directory: Path
    renamed: bool  # its own id was taken: a new one
    workspace: Path


def import_bundle(root: Path, data: bytes, *, now: datetime | None = None) -> Imported:
    """Register the bundle's session under `root`; `SessionError` when it is not one
    this version reads, or its journal does not check out (nothing is left listed)."""
    try:
        bundle = orjson.loads(data)
        manifest = msgspec.convert(bundle["manifest"], Manifest)
        journal = bundle["journal"].encode()
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise SessionError(f"not a session bundle: {exc}") from None
    except msgspec.ValidationError as exc:
        raise SessionError(f"not a session bundle: its manifest: {exc}") from None
    if bundle.get("kind") != KIND or bundle.get("version") != VERSION:
        raise SessionError("not a session bundle of this version (kind orchestrator-session, 1)")
    if manifest.format_version > FORMAT_VERSION:
        raise SessionError(
            f"the bundle's session is in format {manifest.format_version}, newer than this "
            f"orchestrator reads ({FORMAT_VERSION})"
        )
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    session_id, renamed = manifest.id, False
    if session_dir(root, session_id).exists():
        session_id, renamed = new_session_id(now or datetime.now(UTC)), True
    hidden = root / f".import-{session_id}"
    shutil.rmtree(hidden, ignore_errors=True)
    hidden.mkdir(mode=0o700)
    try:
        workspace = _fill(hidden, bundle, manifest, session_id, journal)
        problems = verify(hidden)
        if problems:
            raise SessionError("the bundle's journal does not check out: " + "; ".join(problems))
        directory = session_dir(root, session_id)
        os.rename(hidden, directory)
    except BaseException:
        shutil.rmtree(hidden, ignore_errors=True)
        raise
    shown = workspace if workspace.is_absolute() else directory / workspace
    return Imported(session_id, directory, renamed, shown)


def _fill(
    hidden: Path, bundle: dict[str, Any], manifest: Manifest, session_id: str, journal: bytes
) -> Path:
    """The session's files in `hidden`; its workspace as the manifest names it."""
    (hidden / JOURNAL).write_bytes(journal)
    for key, name in (("snapshot", SNAPSHOT), ("script", SCRIPT)):
        if key in bundle:
            (hidden / name).write_bytes(bundle[key].encode())
    workspace = Path(manifest.workspace)
    relative = not workspace.is_absolute()
    if "checkpoints" in bundle:
        _untar(bundle["checkpoints"], hidden / STORE / "git")
        Shadow(hidden / STORE, hidden / "workspace").ensure()
    if "files" in bundle:
        workspace = Path("workspace")  # (inside the session: relocatable)
        _untar(bundle["files"], hidden / "workspace")
    elif relative:
        (hidden / "workspace").mkdir(mode=0o700, exist_ok=True)
        tree = _last_tree(journal)
        if tree and "checkpoints" in bundle:  # the files as the last checkpoint holds them
            Shadow(hidden / STORE, hidden / "workspace").restore(tree)
    updated = msgspec.structs.replace(manifest, id=session_id, workspace=str(workspace))
    write_manifest(hidden, updated)
    return workspace


def _last_tree(journal: bytes) -> str:
    for line in reversed(journal.splitlines()):
        if b'"k":"workspace_checkpoint"' in line or b'"k":"workspace_restored"' in line:
            return str(orjson.loads(line)["tree"])
    return ""


def _objects(objects: Path, depth: int = 0) -> dict[str, Path]:
    """Every object file of a store, and of the stores it reads (a fork's parent's)."""
    found: dict[str, Path] = {}
    if not objects.is_dir() or depth > 5:
        return found
    alternates = objects / "info" / "alternates"
    if alternates.exists():
        for line in alternates.read_text().splitlines():
            if line.strip():
                found.update(_objects(Path(line.strip()), depth + 1))
    for path in objects.rglob("*"):
        rel = path.relative_to(objects).as_posix()
        if path.is_file() and not rel.startswith("info/"):
            found[rel] = path
    return found


def _tar(files: dict[str, Path]) -> str:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, path in files.items():
            tar.add(path, arcname=name, recursive=False)
    return base64.b64encode(buffer.getvalue()).decode()


def _untar(data: str, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True, mode=0o700)
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(data)), mode="r:gz") as tar:
        tar.extractall(into, filter="data")  # (no path out of `into`, no device, no link out)
