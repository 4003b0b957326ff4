"""The workspace the compaction tests read: big files, so that a few reads fill a window."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A workspace of four files, f0.txt to f3.txt, of 3,500 characters each."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for index in range(4):
        (workspace / f"f{index}.txt").write_text(f"line {index}\n" * 500)
    return workspace
