"""Backoff arithmetic and Retry-After parsing (pure functions)."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from orchestrator.errors import ProviderRateLimited, ProviderTransient
from orchestrator.models.failures import classify, retry_after_seconds
from orchestrator.models.http import RetryPolicy

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "12"}, 12.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "Thu, 01 Jan 2026 12:00:30 GMT"}, 30.0),
        ({"retry-after": "Thu, 01 Jan 2026 11:00:00 GMT"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_seconds(httpx.Headers(headers), now=NOW) == expected


def test_backoff_doubles_with_jitter_and_caps() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0)
    assert [policy.delay(n, None, rand=1.0) for n in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert [policy.delay(n, None, rand=0.0) for n in range(3)] == [0.5, 1.0, 2.0]


def test_retry_after_wins_unless_too_long() -> None:
    policy = RetryPolicy(max_retry_after=60)
    assert policy.delay(3, 10.0, rand=0.7) == 10.0
    assert policy.delay(0, 61.0, rand=0.7) is None


def test_overloaded_and_server_errors_keep_retry_after() -> None:
    error = classify(provider="p", status=529, kind=None, code=None, message="x", retry_after=3)
    assert isinstance(error, ProviderRateLimited)
    assert error.retry_after == 3
    error = classify(provider="p", status=503, kind=None, code=None, message="x", retry_after=4)
    assert isinstance(error, ProviderTransient)
    assert error.retry_after == 4


def test_an_error_keeps_its_status_and_tags_for_those_who_tell_errors_apart() -> None:
    error = classify(
        provider="p", status=404, kind="invalid_request_error", code="model_not_found", message="x"
    )
    assert (error.status, error.tags) == (404, {"invalid_request_error", "model_not_found"})
    told = classify(provider="p", status=None, kind="overloaded_error", code=None, message="x")
    assert (told.status, told.tags) == (None, {"overloaded_error"})
