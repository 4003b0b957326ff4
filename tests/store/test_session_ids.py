"""Session ids: made sortable by time, and checked before any path is built from one."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.errors import InvalidSessionId
from orchestrator.store import (
    is_session_id,
    new_session_id,
    session_dir,
    session_id_time,
    validate_session_id,
)

WHEN = datetime(2026, 11, 23, 2, 53, 10, 999, tzinfo=UTC)


def test_an_id_is_the_utc_time_and_six_hex_digits() -> None:
    rand = random.Random(7).getrandbits
    session_id = new_session_id(WHEN, rand=rand)
    assert session_id == f"20261123T025310-{random.Random(7).getrandbits(24):06x}"
    assert validate_session_id(session_id) == session_id
    assert session_id_time(session_id) == WHEN.replace(microsecond=0)
    tokyo = WHEN.astimezone(timezone(timedelta(hours=9)))
    assert new_session_id(tokyo, rand=lambda bits: 0xABC).startswith("20261123T025310-000abc")
    with pytest.raises(ValueError, match="timezone-aware"):
        new_session_id(datetime(2026, 1, 1))


def test_ids_sort_by_creation_time() -> None:
    rand = random.Random(1).getrandbits
    times = [WHEN + timedelta(seconds=s) for s in (0, 1, 59, 3600, 86400 * 40, 86400 * 400)]
    ids = [new_session_id(t, rand=rand) for t in times]
    assert sorted(reversed(ids)) == ids


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "../x",
        "a/b",
        "/etc/passwd",
        "..",
        "20261123T025310-7f3a9c/..",
        "../20261123T025310-7f3a9",
        "20261123T025310-7F3A9C",  # upper case
        "20261123T025310-7f3a9c\n",
        " 20261123T025310-7f3a9c",
        "20261123T025310_7f3a9c",
        "２0261123T025310-7f3a9c",  # a full-width digit
        "20261399T025310-7f3a9c",  # no such date
        "20261123T256010-7f3a9c",  # no such time
        "20270229T025310-7f3a9c",  # no 29th of February in 2027
        "20261123T025360-7f3a9c",  # no 60th second
        "00001123T025310-7f3a9c",  # no year 0
        "2026112T025310-7f3a9c0",
        "x" * 10_000,
    ],
)
def test_anything_else_is_refused_before_a_path_is_built(tmp_path: Path, bad: str) -> None:
    with pytest.raises(InvalidSessionId) as caught:
        session_dir(tmp_path, bad)
    assert caught.value.value == bad
    assert len(str(caught.value)) < 200
    assert not is_session_id(bad)


def test_session_dir_is_the_id_under_the_root(tmp_path: Path) -> None:
    assert session_dir(tmp_path, "20261123T025310-7f3a9c") == tmp_path / "20261123T025310-7f3a9c"
    with pytest.raises(InvalidSessionId, match="a session id is a string"):
        validate_session_id(None)  # type: ignore[arg-type]


@given(st.datetimes(timezones=st.just(UTC)), st.integers(0, 2**24 - 1))
def test_every_new_id_validates(when: datetime, bits: int) -> None:
    assert is_session_id(new_session_id(when, rand=lambda _: bits))


@given(st.text(max_size=30))
def test_arbitrary_text_is_refused_unless_of_our_form(text: str) -> None:
    if is_session_id(text):
        assert text == new_session_id(session_id_time(text), rand=lambda _: int(text[-6:], 16))
    else:
        with pytest.raises(InvalidSessionId):
            validate_session_id(text)
