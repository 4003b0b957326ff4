"""A real Postgres for the dbos engine's tests (`tests/engine/postgres.py`, which the
engine's benchmark uses too). A machine without it skips the tests that need it,
saying why."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.engine import postgres


def _skip_without() -> None:
    reason = postgres.missing()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a fresh Postgres server (user `postgres`, no password, loopback only)
    that lives as long as the test session."""
    _skip_without()
    with postgres.server() as url:
        yield url


@pytest.fixture(name="postgres")
def postgres_of_its_own() -> Iterator[postgres.Postgres]:
    """A Postgres server of this test's own, which it may stop and start again."""
    _skip_without()
    with postgres.started() as server:
        yield server
