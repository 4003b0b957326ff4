"""Values kept by their files' stamps (orchestrator/stamps.py, `ByStamps`): what the
worker's caches of scripts, agent types and hooks share."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator import stamps
from orchestrator.stamps import ByStamps


def made(cache: ByStamps[str, str], path: Path) -> str:
    return cache.get(str(path), [path], path.read_text)


def test_a_value_is_made_again_once_its_file_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stamps, "RACY_NS", 0)
    path = tmp_path / "a.txt"
    path.write_text("one")
    cache: ByStamps[str, str] = ByStamps()
    assert [made(cache, path), made(cache, path)] == ["one", "one"]
    assert cache.made == 1
    path.write_text("two!")
    assert made(cache, path) == "two!"
    assert cache.made == 2


def test_a_value_of_files_changed_just_now_is_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("one")
    cache: ByStamps[str, str] = ByStamps()
    made(cache, path)
    made(cache, path)
    assert cache.made == 2  # (its next change may leave the stat as it is)


def test_at_most_so_many_are_kept_the_oldest_going_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stamps, "RACY_NS", 0)
    files = [tmp_path / f"{n}.txt" for n in range(3)]
    for path in files:
        path.write_text(path.name)
    cache: ByStamps[str, str] = ByStamps(most=2)
    for path in files:
        made(cache, path)
    assert cache.look(str(files[0]), [files[0]])[1] is None
    assert [cache.look(str(p), [p])[1] for p in files[1:]] == ["1.txt", "2.txt"]
