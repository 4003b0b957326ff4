"""What the time-travel tests share: sessions made by the real command line, and a look
at every byte of a directory."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator.session.shadow import available
from tests.scenes import orchestrator

if not available():
    pytest.skip("workspace checkpoints need git", allow_module_level=True)


def every_byte(root: Path) -> dict[str, str]:
    """Each file under `root` (links as their target), by path: a digest of its bytes."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = "-> " + str(path.readlink())
        elif path.is_file():
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def scripted_run(tmp_path: Path, goal: str, script: dict[str, Any]) -> Path:
    """`orchestrator run GOAL` in the workspace `tmp_path/ws` (made beforehand by the
    test) with the scripted model `script`, asking nobody: the sessions' root."""
    path = tmp_path / "script.json"
    path.write_bytes(orjson.dumps(script))
    root = tmp_path / "sessions"
    ran = orchestrator(
        "run", goal, "--model", f"scripted:{path}", "-w", str(tmp_path / "ws"), "--yes",
        "--sessions-dir", str(root),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return root


def sessions(root: Path) -> list[str]:
    listed = orchestrator("sessions", "list", "--json", "--sessions-dir", str(root))
    assert listed.returncode == 0, listed.stderr
    return [orjson.loads(line)["id"] for line in listed.stdout.splitlines()]


def points(root: Path, session_id: str) -> list[dict[str, Any]]:
    shown = orchestrator("sessions", "points", session_id, "--json", "--sessions-dir", str(root))
    assert shown.returncode == 0, shown.stderr
    return [orjson.loads(line) for line in shown.stdout.splitlines()]


def verified(root: Path, session_id: str) -> None:
    check = orchestrator("sessions", "verify", session_id, "--sessions-dir", str(root))
    assert check.returncode == 0, check.stdout + check.stderr


def journal_kinds(directory: Path) -> list[str]:
    return [
        orjson.loads(line)["k"] for line in (directory / "journal.jsonl").read_bytes().splitlines()
    ]
