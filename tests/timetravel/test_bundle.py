"""A session exported as a bundle is imported elsewhere whole: it verifies, its journal
is the same bytes, its workspace comes back from its last checkpoint (or from the files,
with --with-files, said not to be redacted); a second import gets a new id; a bundle whose
journal was tampered with is refused and nothing is listed. The markdown export reads as
the session's report, every agent's transcript and the plan."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.scenes import orchestrator
from tests.timetravel.conftest import sessions, verified
from tests.timetravel.test_rewind import shell_session
from tests.workspaces import workspace_files


def test_a_bundle_is_imported_whole_and_a_second_time_under_a_new_id(tmp_path: Path) -> None:
    root, _, session_id = shell_session(tmp_path)
    bundle = tmp_path / "s.json"
    out = orchestrator("sessions", "export", session_id, "--format", "json", "-o", str(bundle),
                       "--sessions-dir", str(root))  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "not redacted" not in out.stderr
    elsewhere = tmp_path / "elsewhere"
    first = orchestrator("sessions", "import", str(bundle), "--sessions-dir", str(elsewhere))
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"imported session {session_id};")
    verified(elsewhere, session_id)
    journal = "journal.jsonl"
    assert (elsewhere / session_id / journal).read_bytes() == (
        root / session_id / journal
    ).read_bytes()
    second = orchestrator("sessions", "import", str(bundle), "--sessions-dir", str(elsewhere))
    assert second.returncode == 0, second.stderr
    assert "(its own id was taken)" in second.stdout
    assert len(sessions(elsewhere)) == 2


def test_with_files_the_workspace_travels_and_is_said_unredacted(tmp_path: Path) -> None:
    root, ws, session_id = shell_session(tmp_path)
    bundle = tmp_path / "s.json"
    out = orchestrator("sessions", "export", session_id, "--format", "json", "--with-files",
                       "-o", str(bundle), "--sessions-dir", str(root))  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "not redacted" in out.stderr
    elsewhere = tmp_path / "elsewhere"
    made = orchestrator("sessions", "import", str(bundle), "--sessions-dir", str(elsewhere))
    assert made.returncode == 0, made.stderr
    assert workspace_files(elsewhere / session_id / "workspace") == workspace_files(ws)


def test_a_tampered_bundle_is_refused_and_nothing_is_listed(tmp_path: Path) -> None:
    root, _, session_id = shell_session(tmp_path)
    out = orchestrator("sessions", "export", session_id, "--format", "json",
                       "--sessions-dir", str(root))  # fmt: skip
    bundle = orjson.loads(out.stdout)
    bundle["journal"] = bundle["journal"].replace('"status":"completed"', '"status":"failed"')
    bad = tmp_path / "bad.json"
    bad.write_bytes(orjson.dumps(bundle))
    elsewhere = tmp_path / "elsewhere"
    refused = orchestrator("sessions", "import", str(bad), "--sessions-dir", str(elsewhere))
    assert refused.returncode != 0
    assert "the bundle's journal does not check out" in refused.stderr
    assert sessions(elsewhere) == []
    assert list(elsewhere.iterdir()) == []


def test_the_markdown_export_has_the_report_every_transcript_and_the_plan(
    tmp_path: Path,
) -> None:
    root, _, session_id = shell_session(tmp_path)
    out = orchestrator("sessions", "export", session_id, "--sessions-dir", str(root))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"# Session {session_id}\n")
    assert "## Transcript" in out.stdout
    assert "── main (main)" in out.stdout
    assert "sed -i s/one/two/ a.txt" in out.stdout
