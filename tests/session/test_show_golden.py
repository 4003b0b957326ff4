"""`sessions show` as a person reads it, byte for byte: of the recorded sessions of this
format (finished, and killed mid-turn) and of a fresh two-level tree with prices, each
against its golden file under `golden/`. A fresh session's id and times are made fixed
first (its journal re-timed, checksums and all), so that durations read the same on any
machine. `ORCHESTRATOR_GOLDEN=1` writes the golden files from the output instead (then
read them by eye before committing)."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import orjson
import pytest

from orchestrator import load_state
from orchestrator.cli import main
from orchestrator.layout import FORMAT_VERSION, JOURNAL, SNAPSHOT
from orchestrator.state import read_manifest, write_manifest
from orchestrator.store._line import FRAME_KEYS, encode
from tests.scenes import matches_golden
from tests.session.test_inspection import finished_tree, no_user_config  # noqa: F401

GOLDEN = Path(__file__).parent / "golden"
RECORDED = Path(__file__).parents[2] / "sessions"
FIXED_ID = "20311127T060612-5e55a0"
FIXED_HOST = {"host": "box", "pid": 4242}  # where each run of a task ran
START_MS = 1953439572000  # 2031-11-27 06:06:12 UTC, the fixed id's time
STEP_MS = 7  # between two records


def show(capsys: pytest.CaptureFixture[str], root: Path, session_id: str) -> str:
    assert main(["sessions", "show", session_id, "--sessions-dir", str(root)]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", ["completed", "killed-mid-turn"])
def test_a_recorded_session(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    root = tmp_path / "recorded"
    shutil.copytree(RECORDED / f"v{FORMAT_VERSION}-{name}", root)
    [session_id] = [p.name for p in root.iterdir()]
    matches_golden(GOLDEN / f"recorded-{name}.txt", show(capsys, root, session_id))


async def test_a_fresh_tree_with_prices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    directory = fixed(root / await finished_tree(root))
    config = tmp_path / "config.toml"
    config.write_text("[prices.scripted]\ninput = 2.5\noutput = 10.0\n")
    monkeypatch.setenv("ORCHESTRATOR_CONFIG", str(config))
    matches_golden(GOLDEN / "fresh-tree.txt", show(capsys, root, directory.name))


def fixed(directory: Path) -> Path:
    """The session in `directory` under the fixed id, created at its time, its records
    `STEP_MS` apart from then (each record's `at` its own time), each run of a task on
    `FIXED_HOST`, and its snapshot and manifest written again to match."""
    lines = []
    for line in (directory / JOURNAL).read_bytes().splitlines():
        fields = orjson.loads(line)
        at = START_MS + (fields["seq"] - 1) * STEP_MS
        body = {k: at if k == "at" else v for k, v in fields.items() if k not in FRAME_KEYS}
        if "ran_on" in body:
            body["ran_on"] = FIXED_HOST
        end = "more" not in fields
        lines.append(encode(fields["seq"], at, fields["k"], fields["a"], body, end=end))
    (directory / JOURNAL).write_bytes(b"".join(lines))
    moved = directory.rename(directory.parent / FIXED_ID)
    created = "2031-11-27T06:06:12.000000+00:00"
    manifest = msgspec.structs.replace(
        read_manifest(moved),
        id=FIXED_ID,
        created=created,
        updated=created,
        journal_size=(moved / JOURNAL).stat().st_size,
    )
    write_manifest(moved, manifest)
    (moved / SNAPSHOT).unlink()  # (its times are the old ones)
    state = load_state(moved, warn=pytest.fail)
    (moved / SNAPSHOT).write_bytes(state.snapshot_json())
    return moved
