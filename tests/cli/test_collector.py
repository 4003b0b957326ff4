"""The `orchestrator` process's garbage collector (cli/collector.py): young collections
rare while a command starts; once a run's session is set up, what exists is frozen out
of every collection and the young are collected every 7,000 allocations; a command
that runs no session keeps the starting setting to its end; and a program calling
`main([...])` keeps its own collector as it was."""

from __future__ import annotations

import gc
from pathlib import Path

from orchestrator.cli import collector
from orchestrator.cli.main import main
from tests.cli.child import after_command


def _collector_after(argv: list[str]) -> dict[str, int]:
    """The collector's young threshold and frozen count as `orchestrator ARGV` ends."""
    report = "{'young': gc.get_threshold()[0], 'frozen': gc.get_freeze_count(), 'code': code}"
    found: dict[str, int] = after_command(argv, report)
    return found


def _run(tmp_path: Path) -> list[str]:
    """`run` of a one-reply scripted session in `tmp_path`."""
    script = tmp_path / "script.json"
    script.write_text('{"agents": {"main": [{"text": "done"}]}}')
    workspace = ["-w", str(tmp_path), "--sessions-dir", str(tmp_path / "s")]
    return ["run", "hi", "-m", f"scripted:{script}", *workspace, "--yes", "--sandbox", "off"]


def test_a_run_settles_the_collector_once_its_session_is_set_up(tmp_path: Path) -> None:
    after = _collector_after(_run(tmp_path))
    assert after["code"] == 0
    assert after["young"] == collector.YOUNG
    assert after["frozen"] > 10_000  # (its modules, its classes, the config's models)


def test_a_command_that_runs_no_session_keeps_young_collections_rare(tmp_path: Path) -> None:
    after = _collector_after(["sessions", "list", "--sessions-dir", str(tmp_path)])
    assert after == {"young": collector.STARTING_YOUNG, "frozen": 0, "code": 0}


def test_a_program_calling_main_keeps_its_own_collector(tmp_path: Path) -> None:
    before = gc.get_threshold(), gc.get_freeze_count()
    assert main(_run(tmp_path)) == 0
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
