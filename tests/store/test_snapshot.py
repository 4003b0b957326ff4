"""Snapshots: atomic replacement and readable JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.store import (
    read_json,
    write_atomic,
    write_json_atomic,
)
from orchestrator.store import snapshot as snapshot_module


def test_write_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "todos.json"
    write_atomic(path, b"old")
    write_atomic(path, b"new")
    assert path.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["todos.json"]


def test_a_failed_write_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "todos.json"
    write_atomic(path, b"old")

    def half_then_fail(fd: int, data: bytes) -> None:
        import os

        os.write(fd, data[:2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshot_module, "write_all", half_then_fail)
    with pytest.raises(OSError, match="No space"):
        write_atomic(path, b"new contents")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["todos.json"]


def test_json_snapshots_are_indented_for_people(tmp_path: Path) -> None:
    path = tmp_path / "todos.json"
    write_json_atomic(path, {"seq": 3, "items": [{"id": "t1", "status": "pending"}]})
    assert path.read_text() == (
        '{\n  "seq": 3,\n  "items": [\n    {\n      "id": "t1",\n      "status": "pending"\n'
        "    }\n  ]\n}\n"
    )
    assert read_json(path) == {"seq": 3, "items": [{"id": "t1", "status": "pending"}]}
    with pytest.raises(TypeError):
        write_json_atomic(path, {"bad": object()})
    assert read_json(path)["seq"] == 3


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=15,
)


@given(json_values)
def test_any_json_value_round_trips(tmp_path_factory: pytest.TempPathFactory, value: Any) -> None:
    path = tmp_path_factory.mktemp("s") / "value.json"
    value = orjson.loads(orjson.dumps(value))  # inf becomes null, as it would on any write
    write_json_atomic(path, value)
    assert read_json(path) == value
