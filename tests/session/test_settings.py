"""The settings a session runs with are one journal record at its start: a resume, from
the command line or a library, goes on with them unless it overrides them explicitly
(journaled too); format-4 sessions bring their manifest's flags along."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from orchestrator import (
    ScriptedModel,
    SessionSettings,
    SettingsChosen,
    create_session,
    drive,
    load_state,
    open_session,
)
from orchestrator.errors import SessionError
from orchestrator.layout import FORMAT_VERSION
from orchestrator.messages import plain
from orchestrator.models.scripted import parse_script
from orchestrator.session import migrate
from orchestrator.session.live import JOURNAL
from orchestrator.session.migrations import v4_to_v5
from orchestrator.state import decode_record, read_manifest
from orchestrator.store import scan_journal
from tests.scenes import run_settings

RECORDED = Path(__file__).parents[2] / "sessions"
VERIFY = "python -m doctest README.md"


def settings_records(directory: Path) -> list[SettingsChosen]:
    scan = scan_journal(directory / JOURNAL)
    records = [decode_record(line) for line in scan.lines]
    return [r for r in records if isinstance(r, SettingsChosen)]


def v4_copy(tmp_path: Path, name: str, **manifest: Any) -> Path:
    root = tmp_path / "sessions"
    shutil.copytree(RECORDED / f"v4-{name}", root)
    [directory] = [p for p in root.iterdir() if p.is_dir()]
    fields = orjson.loads((directory / "session.json").read_bytes())
    (directory / "session.json").write_bytes(orjson.dumps({**fields, **manifest}))
    return directory


def test_format_4_flags_become_the_settings_record(tmp_path: Path) -> None:
    flags = {"verify": [VERIFY], "budget_time": 600.0, "serial": True}
    directory = v4_copy(tmp_path, "killed-mid-turn", flags=flags)
    last = scan_journal(directory / JOURNAL).last_seq
    v4_to_v5(directory)
    v4_to_v5(directory)  # as if killed before the manifest said format 5: not twice
    [record] = settings_records(directory)
    assert record.source == "migrated"
    assert record.settings == SessionSettings(verify=(VERIFY,), budget_wall=600.0, serial=True)
    assert scan_journal(directory / JOURNAL).last_seq == last + 1
    assert migrate(directory, read_manifest(directory)).format_version == FORMAT_VERSION
    assert load_state(directory, warn=pytest.fail).settings == record.settings
    raw = orjson.loads((directory / "session.json").read_bytes())
    assert raw["format_version"] == FORMAT_VERSION
    assert "flags" not in raw


def test_a_format_4_session_without_flags_gets_its_settings_when_it_next_runs(
    tmp_path: Path,
) -> None:
    directory = v4_copy(tmp_path, "completed")
    v4_to_v5(directory)
    assert settings_records(directory) == []
    assert load_state(directory, warn=pytest.fail).settings is None


def test_format_4_flags_that_are_not_settings_are_a_clear_error(tmp_path: Path) -> None:
    directory = v4_copy(tmp_path, "completed", flags={"max_auto_continues": "many"})
    with pytest.raises(SessionError, match=r"session\.json: its flags are not session settings"):
        v4_to_v5(directory)
    assert settings_records(directory) == []


SCRIPT = {"agents": {"main": [{"text": "done"}] * 3}}


def made(tmp_path: Path, settings: SessionSettings | None = None) -> tuple[Path, str, Path]:
    """A new session (root, id, directory) of the scripted model, made with `settings`."""
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(SCRIPT))
    root = tmp_path / "sessions"
    session_id, directory = create_session(
        root, goal="g", model=f"scripted:{script}", workspace=None, settings=settings
    )
    return root, session_id, directory


async def run(
    root: Path, session_id: str, session: SessionSettings | None, message: str = ""
) -> None:
    """`drive` the session from a library, giving it `session` (None: the journal's)."""
    async with open_session(root, session_id, warn=lambda _: None) as live:
        await drive(
            live,
            run_settings(
                ScriptedModel(parse_script(SCRIPT)),
                session=session,
                message=message,
            ),
        )


async def test_a_library_resume_keeps_the_journaled_settings_unless_it_overrides_them(
    tmp_path: Path,
) -> None:
    chosen = SessionSettings(max_rounds=7, budget_rounds=40)
    root, session_id, directory = made(tmp_path, chosen)
    await run(root, session_id, None)
    await run(root, session_id, chosen, "again")  # the same, given: nothing new to journal
    await run(root, session_id, chosen.but(max_rounds=9), "once more")
    records = settings_records(directory)
    assert [(r.source, r.settings.max_rounds) for r in records] == [
        ("library", 7),
        ("override", 9),
    ]
    assert records[1].settings.budget_rounds == 40  # the rest stands
    assert load_state(directory, warn=pytest.fail).settings == records[1].settings


async def test_a_session_made_without_settings_journals_the_defaults_as_it_starts(
    tmp_path: Path,
) -> None:
    root, session_id, directory = made(tmp_path)
    await run(root, session_id, None)
    [record] = settings_records(directory)
    assert (record.source, record.settings) == ("start", SessionSettings())
    assert read_manifest(directory).status == "completed"


def test_sessions_show_says_what_the_session_runs_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from orchestrator.cli import main

    root = tmp_path / "sessions"
    shutil.copytree(RECORDED / f"v{FORMAT_VERSION}-completed", root)
    [session] = [p.name for p in root.iterdir()]
    assert main(["sessions", "show", session, "--sessions-dir", str(root)]) == 0
    shown_text = capsys.readouterr().out
    assert f'settings   the defaults, but verify ["{VERIFY}"], plan true\n' in shown_text
    # The sandbox and the approval given in advance, journaled (format 11), on lines of
    # their own: the recording ran with `--plan --approve` at the default sandbox.
    assert "sandbox    workspace, no network\n" in shown_text
    assert "approval   --approve: plan v1, and a later version that adds no task" in shown_text
    assert main(["sessions", "show", session, "--sessions-dir", str(root), "--json"]) == 0
    shown = orjson.loads(capsys.readouterr().out)
    assert shown["settings"] == {
        **plain(SessionSettings()),
        "verify": [VERIFY],
        "plan": True,
        "sandbox": "workspace",
        "network": False,
        "approve": "seen",
        "approve_through": 1,
    }
