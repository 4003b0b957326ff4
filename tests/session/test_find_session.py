"""A session named by a person: its id, the start of one, its random part, or `--last`
(issue 38, item 7): the one session meant, or an error that says why not."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from orchestrator.errors import ConfigError, InvalidSessionId, SessionNotFound
from orchestrator.session.listing import find_session
from orchestrator.session.live import create_session
from tests.scenes import orchestrator


def made(root: Path, *stamps: str) -> list[str]:
    """Sessions created at each `HHMMSS` of 2026-11-28, in order."""
    ids = []
    for stamp in stamps:
        now = datetime.strptime(f"20261128{stamp}", "%Y%m%d%H%M%S").replace(tzinfo=UTC)
        ids.append(create_session(root, goal="g", model="object:x", workspace=None, now=now)[0])
    return ids


def test_an_id_its_start_its_random_part_or_the_newest(tmp_path: Path) -> None:
    first, second, third = made(tmp_path, "101010", "111111", "121212")
    assert find_session(tmp_path, first) == first
    assert find_session(tmp_path, "20261128T11") == second  # the one id it starts
    assert find_session(tmp_path, third.partition("-")[2]) == third  # its random part
    assert find_session(tmp_path, None, last=True) == third


@pytest.mark.parametrize(
    ("given", "last", "error", "said"),
    [
        ("20261128T1", False, ConfigError, "starts 3 session ids"),
        ("20261127", False, SessionNotFound, "has an id that starts with '20261127'"),
        ("../etc", False, InvalidSessionId, "is not a session id"),
        (None, False, ConfigError, "give a session ID"),
        ("20261128T10", True, ConfigError, "not both"),
    ],
)
def test_what_names_no_one_session(
    tmp_path: Path, given: str | None, last: bool, error: type[Exception], said: str
) -> None:
    made(tmp_path, "101010", "111111", "121212")
    with pytest.raises(error, match=said.replace("(", r"\(")):
        find_session(tmp_path, given, last=last)


def test_the_commands_take_a_start_or_last(tmp_path: Path) -> None:
    first, second = made(tmp_path, "101010", "111111")
    where = ("--sessions-dir", str(tmp_path))
    shown = orchestrator("sessions", "show", "20261128T10", "--json", *where)
    assert shown.returncode == 0, shown.stderr
    assert f'"{first}"' in shown.stdout
    newest = orchestrator("sessions", "show", "--last", "--json", *where)
    assert f'"{second}"' in newest.stdout
    verified = orchestrator("sessions", "verify", "--last", *where)
    assert verified.returncode == 0, verified.stderr
    shared = orchestrator("sessions", "show", "2026", *where)
    assert shared.returncode == 2
    assert "'2026' starts 2 session ids" in shared.stderr
    # A deletion names its session: no --last.
    refused = orchestrator("sessions", "delete", "--last", *where)
    assert refused.returncode == 2
    assert (tmp_path / second).is_dir()
