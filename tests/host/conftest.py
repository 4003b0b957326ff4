"""The host tests' workspace: a directory (the library takes a path) holding `in.txt`."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    where = tmp_path / "work"
    where.mkdir()
    (where / "in.txt").write_text("hello")
    return where
