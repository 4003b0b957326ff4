"""`demo --latency SECONDS` (issue 38): every model reply of the demo waits, so the run is
slow enough to watch or to kill by hand (the README's recipe), and its session keeps the
slowed script, so a resume is as slow."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from orchestrator.demo import script_path
from tests.scenes import orchestrator


def test_demo_latency_slows_every_reply_of_the_session(tmp_path: Path) -> None:
    root = tmp_path / "s"
    ran = orchestrator("demo", "--no-crash", "--latency", "0.05", "-w", str(tmp_path / "ws"),
                       "--sessions-dir", str(root))  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [session_id] = re.findall(r"^session (\S+) \(in ", ran.stdout, re.MULTILINE)
    assert f"session {session_id} completed" in ran.stdout
    kept = orjson.loads((root / session_id / "script.json").read_bytes())
    assert kept == {**orjson.loads(script_path().read_bytes()), "latency": 0.05}
    shown = orchestrator("sessions", "show", session_id, "--json", "--sessions-dir", str(root))
    info = orjson.loads(shown.stdout)
    assert info["model"] == "scripted:script.json"  # shown as the demo's own script
    # The builder's calls come one after the other: each waited its 0.05 s.
    calls = info["agents"]["main"]["model_calls"]
    assert calls >= 5
    assert info["last_record_time"] - info["first_record_time"] >= calls * 0.05


def test_demo_without_latency_keeps_the_script_as_it_is(tmp_path: Path) -> None:
    root = tmp_path / "s"
    ran = orchestrator("demo", "--no-crash", "-w", str(tmp_path / "ws"),
                       "--sessions-dir", str(root))  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [session] = list(root.iterdir())
    assert (session / "script.json").read_bytes() == script_path().read_bytes()


@pytest.mark.parametrize(
    ("given", "said"),
    [("-1", "must be from 0 to 60 seconds, not -1"), ("61", "must be from 0 to 60 seconds"),
     ("soon", "not a number of seconds: 'soon'")],
)  # fmt: skip
def test_demo_latency_out_of_range_is_a_usage_error(tmp_path: Path, given: str, said: str) -> None:
    refused = orchestrator("demo", "--latency", given, "--sessions-dir", str(tmp_path / "s"))
    assert refused.returncode == 2
    assert said in refused.stderr
    assert not (tmp_path / "s").exists()
