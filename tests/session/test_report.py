"""`sessions show` read from the snapshot (`quick_describe`) shows exactly what folding the
whole journal shows (`describe`), and falls back to the fold when the snapshot does not
cover the journal."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator import Price, SessionState, load_state
from orchestrator.cli import main
from orchestrator.layout import FORMAT_VERSION
from orchestrator.session import describe, quick_describe
from orchestrator.session.ledger import usage_table
from orchestrator.session.live import JOURNAL, SNAPSHOT
from orchestrator.state import Manifest, decode_record, read_manifest, write_manifest
from orchestrator.store import scan_journal
from tests.cli.test_cli import ROOT, orchestrator, sessions_root  # noqa: F401  (an autouse fixture)
from tests.cli.test_cli_assessment import ONE_TODO_DONE, script, session_id, workspace
from tests.scenes import call
from tests.state.test_fold import Drawn, fold, journals, write_journal

RECORDINGS = sorted(p.name for p in (ROOT / "sessions").iterdir())


def the_same(directory: Path, prices: dict[str, Price] | None = None) -> dict[str, Any]:
    """What `show` reads from the snapshot, checked against the fold (keys in the same
    order: `--json` prints them as they come), for a few `--events` counts."""
    for last in (10, 0, 1, 10_000):
        quick = quick_describe(directory, last, prices or {})
        assert quick is not None, "the snapshot covers the journal: no fold needed"
        full = describe(directory, last, prices or {})
        assert quick == full
        assert orjson.dumps(quick) == orjson.dumps(full)
    return quick


def shown(capsys: pytest.CaptureFixture[str], root: Path, sid: str, *flags: str) -> str:
    """`sessions show`'s output (a killed session's live tasks are timed up to its
    journal's last record: the same however late it is shown)."""
    assert main(["sessions", "show", sid, "--sessions-dir", str(root), *flags]) == 0
    return capsys.readouterr().out


def write_closing_snapshot(directory: Path) -> None:
    """The snapshot a session writes when it closes: the fold of its whole journal; and
    its manifest as this version writes it (a recording's may predate `flags`)."""
    state = load_state(directory, warn=lambda _: None)
    (directory / SNAPSHOT).write_bytes(state.snapshot_json())
    write_manifest(directory, read_manifest(directory))


@pytest.mark.parametrize("name", RECORDINGS)
def test_every_recording_falls_back_then_reads_its_closing_snapshot(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "recorded"
    shutil.copytree(ROOT / "sessions" / name, root)
    [sid] = [p.name for p in root.iterdir()]
    directory = root / sid
    # An older format, a snapshot of an older layout, or none (killed): the fold. The
    # current format's finished recording has its closing snapshot already.
    quick = quick_describe(directory, 10, {})
    assert (quick is not None) == (name == f"v{FORMAT_VERSION}-completed")
    folded_text = shown(capsys, root, sid)  # migrates an older format first
    folded_json = shown(capsys, root, sid, "--json")
    write_closing_snapshot(directory)
    the_same(directory)
    assert shown(capsys, root, sid) == folded_text
    assert shown(capsys, root, sid, "--json") == folded_json


def test_records_after_the_snapshot_need_the_fold(tmp_path: Path) -> None:
    root = tmp_path / "recorded"
    shutil.copytree(ROOT / "sessions" / f"v{FORMAT_VERSION}-killed-mid-turn", root)
    directory = next(root.iterdir())
    scan = scan_journal(directory / JOURNAL)
    state = SessionState()
    for seq, line in enumerate(scan.lines[:-3], 1):  # killed three records after it
        state.apply(seq, decode_record(line))
    (directory / SNAPSHOT).write_bytes(state.snapshot_json())
    assert quick_describe(directory, 10, {}) is None
    write_closing_snapshot(directory)
    assert quick_describe(directory, 10, {}) is not None


def test_anything_unexpected_needs_the_fold(tmp_path: Path) -> None:
    root = tmp_path / "recorded"
    shutil.copytree(ROOT / "sessions" / f"v{FORMAT_VERSION}-completed", root)
    directory = next(root.iterdir())
    write_closing_snapshot(directory)
    assert quick_describe(directory, 10, {}) is not None
    manifest = directory / "session.json"
    good = manifest.read_bytes()
    for change in (
        lambda m: m.update(journal_seq="97"),  # the model would coerce it
        lambda m: m.update(status="paused"),  # the model refuses it
        lambda m: m.update(format_version=FORMAT_VERSION + 1),  # a newer format: refused
    ):
        fields = orjson.loads(good)
        change(fields)
        manifest.write_bytes(orjson.dumps(fields))
        assert quick_describe(directory, 10, {}) is None
    manifest.write_bytes(good)
    snapshot = orjson.loads((directory / SNAPSHOT).read_bytes())
    del snapshot["agents"]["main"]["message_count"]  # layout 2 did not count
    snapshot["layout"] = 2
    (directory / SNAPSHOT).write_bytes(orjson.dumps(snapshot))
    assert quick_describe(directory, 10, {}) is None
    (directory / SNAPSHOT).write_bytes(b'{"layout": 3, "seq": 97}')  # not a whole snapshot
    assert quick_describe(directory, 10, {}) is None


def test_a_torn_tail_is_shown_the_same(tmp_path: Path) -> None:
    root = tmp_path / "recorded"
    shutil.copytree(ROOT / "sessions" / f"v{FORMAT_VERSION}-completed", root)
    directory = next(root.iterdir())
    write_closing_snapshot(directory)
    with (directory / JOURNAL).open("ab") as journal:
        journal.write(b'{"seq":98,"t":1,"k":"turn_sta')  # killed mid-write
    info = the_same(directory)
    assert "torn tail" in info["warnings"][0]


def test_the_demo_with_its_crash_tasks_mail_todos_and_assessments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = tmp_path / "sessions"
    result = orchestrator("demo", "-w", str(tmp_path / "ws"))
    assert result.returncode == 0, result.stderr
    [directory] = list(sessions.iterdir())
    info = the_same(directory)
    # The plan's four, and the text worker's test run in the background.
    assert [t["kind"] for t in info["tasks"]] == ["agent"] * 4 + ["tool"]
    assert any(m["answered_by"] for m in info["mailbox"])
    assert all(m["delivered_seq"] for m in info["mailbox"])
    assert any(item["blocked_by"] for item in info["todos"]["main"]["items"])
    assert {a["action"] for a in info["assessments"]} >= {"verify", "completed"}
    assert [v["decision"] for v in info["plan"]["versions"]] == ["approved", "approved"]
    assert {a["messages"] for a in info["agents"].values()} != {0}
    text = shown(capsys, sessions, directory.name)
    (directory / SNAPSHOT).unlink()  # the fold, as before
    assert quick_describe(directory, 10, {}) is None
    assert shown(capsys, sessions, directory.name) == text


def test_a_blocked_session_shows_its_reason(tmp_path: Path) -> None:
    model = script(
        tmp_path, {"tool_calls": [call("report_blocked", category="input", reason="which db?")]}
    )
    result = orchestrator(
        "run", "set up the db", "--model", model, "-w", str(workspace(tmp_path)), "--yes"
    )
    assert result.returncode == 3, result.stderr
    info = the_same(tmp_path / "sessions" / session_id(result.stdout))
    assert info["status"] == "blocked"
    assert "which db?" in info["reason"]


def test_prices_are_summed_call_by_call(tmp_path: Path) -> None:
    model = script(tmp_path, *ONE_TODO_DONE)
    result = orchestrator("run", "do a", "--model", model, "-w", str(workspace(tmp_path)), "--yes")
    assert result.returncode == 0, result.stderr
    directory = tmp_path / "sessions" / session_id(result.stdout)
    # Thirds do not add up exactly in binary: a sum of totals would differ from the
    # sum of the calls' costs.
    prices = {read_manifest(directory).model: Price(input=1 / 3, output=0.1)}
    info = the_same(directory, prices)
    assert info["usage"]["session"]["cost_usd"] > 0
    assert usage_table(the_same(directory, {"other": Price(input=1, output=1)})["usage"]).count(
        "unpriced"
    )


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=journals(), priced=st.booleans())
def test_any_journal_with_its_closing_snapshot(
    tmp_path_factory: pytest.TempPathFactory, drawn: Drawn, priced: bool
) -> None:
    directory = tmp_path_factory.mktemp("session")
    write_journal(directory, drawn.records)
    manifest = Manifest(
        id=directory.name, goal="g", model="m", workspace="w", created="c", updated="u"
    )
    write_manifest(directory, manifest)
    (directory / SNAPSHOT).write_bytes(fold(drawn.records).snapshot_json())
    the_same(directory, {"m": Price(input=0.3, output=0.7, cache_read=0.1)} if priced else {})


def test_show_from_a_snapshot_imports_no_pydantic(tmp_path: Path) -> None:
    root = tmp_path / "recorded"
    shutil.copytree(ROOT / "sessions" / f"v{FORMAT_VERSION}-completed", root)
    directory = next(root.iterdir())
    write_closing_snapshot(directory)
    code = (
        "import contextlib, io, sys\n"
        "from orchestrator.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['sessions', 'show', {directory.name!r}, '--sessions-dir', {str(root)!r}])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'trio', "
        "'httpx', 'pydantic_core')))\n"
    )
    env = {**os.environ, "ORCHESTRATOR_CONFIG_DIR": str(tmp_path / "no-config")}
    env.pop("ORCHESTRATOR_CONFIG", None)

    def heavy_modules() -> str:
        run = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        )
        return run.stdout.strip()

    assert heavy_modules() == "[]"
    # A config file without prices: nothing to load its schemas for.
    (tmp_path / "config.toml").write_text('model = "openai:gpt-4o"\n')
    env["ORCHESTRATOR_CONFIG"] = str(tmp_path / "config.toml")
    assert heavy_modules() == "[]"
    # With prices in it, they are read (and the config's schemas with them).
    (tmp_path / "config.toml").write_text("[prices.m]\ninput = 1.0\noutput = 2.0\n")
    assert "pydantic" in heavy_modules()
