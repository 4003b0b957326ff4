"""`resume --last` says which session it took before it resumes (issue 38): a kill
before the new session existed leaves an older one the newest, and a person must see that
this is the one going on."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import orjson

from orchestrator.session.shown import moment
from tests.scenes import orchestrator

ROOT = Path(__file__).parents[2]
HELLO = f"scripted:{ROOT / 'examples' / 'hello-script.json'}"


def _manifest(root: Path, session_id: str) -> dict[str, str]:
    manifest: dict[str, str] = orjson.loads((root / session_id / "session.json").read_bytes())
    return manifest


def test_resume_last_names_the_session_it_took_first(tmp_path: Path) -> None:
    root = tmp_path / "s"
    shutil.copytree(ROOT / "sessions" / "v10-killed-mid-turn", root)
    [killed] = [p.name for p in root.iterdir()]
    # A newer session, finished: --last takes it, and says so even with nothing to do.
    ran = orchestrator("run", "say hello", "-m", HELLO, "--session-workspace", "--yes",
                       "--sessions-dir", str(root))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    [newest] = re.findall(r"^session (\S+) \(in ", ran.stdout, re.MULTILINE)
    created = moment(_manifest(root, newest)["created"])

    done = orchestrator("resume", "--last", "--yes", "--sessions-dir", str(root))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        f"--last: session {newest}, created {created}: say hello",
        f"session {newest} already finished (completed); nothing to do (give --message to "
        "follow up)",
    ]

    # With the newer one gone (as if a kill came before it was made), --last is the
    # killed session, named before the run goes on.
    shutil.rmtree(root / newest)
    resumed = orchestrator("resume", "--last", "--yes", "--approve", "--sessions-dir", str(root))
    assert resumed.returncode == 0, resumed.stdout
    first, second = resumed.stdout.splitlines()[:2]
    goal = _manifest(root, killed)["goal"]
    assert first == (
        f"--last: session {killed}, created {moment(_manifest(root, killed)['created'])}: "
        f"{goal[:79]}…"
    )
    assert second.startswith(f"resuming session {killed} (in {root}); ")


def test_resume_by_id_says_nothing_of_last(tmp_path: Path) -> None:
    root = tmp_path / "s"
    ran = orchestrator("run", "say hello", "-m", HELLO, "--session-workspace", "--yes",
                       "--sessions-dir", str(root))  # fmt: skip
    [session_id] = re.findall(r"^session (\S+) \(in ", ran.stdout, re.MULTILINE)
    again = orchestrator("resume", session_id, "--sessions-dir", str(root))
    assert again.returncode == 0, again.stderr
    assert "--last" not in again.stdout
    assert again.stdout.startswith(f"session {session_id} already finished")
