"""A workspace's files as a person sees them, for tests that compare one before and after."""

from __future__ import annotations

from pathlib import Path


def workspace_files(root: Path) -> dict[str, bytes]:
    """The workspace's files as a person sees them (caches left out)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }
