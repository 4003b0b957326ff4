"""Session ids: `20261123T025310-7f3a9c`, the UTC creation time and 24 random bits.

Ids sort by creation time as plain strings, read as a date, and are safe as a directory
name. Any id from outside (a command line, a file) goes through `validate_session_id`
before a path is built from it: `session_dir` does so, so `../x` or `a/b` never reaches
the file system.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.errors import InvalidSessionId

SESSION_ID_LENGTH = 22
_FORM = "YYYYMMDDTHHMMSS-xxxxxx (UTC time, 6 lower-case hex digits)"
_PATTERN = re.compile(r"[0-9]{8}T[0-9]{6}-[0-9a-f]{6}")


def new_session_id(now: datetime, *, rand: Callable[[int], int] | None = None) -> str:
    """A fresh id for a session created at `now` (timezone-aware). `rand(k)` returns k
    random bits (default: `secrets.randbits`): pass `random.Random(seed).getrandbits` for
    reproducible ids."""
    if now.tzinfo is None:
        raise ValueError("new_session_id needs a timezone-aware time, e.g. datetime.now(UTC)")
    if rand is None:
        import secrets  # here, not above: only making a session needs it (hmac, hashlib)

        rand = secrets.randbits
    t = now.astimezone(UTC)
    stamp = f"{t.year:04}{t.month:02}{t.day:02}T{t.hour:02}{t.minute:02}{t.second:02}"
    return f"{stamp}-{rand(24) & 0xFFFFFF:06x}"


def is_session_id(value: str) -> bool:
    """Whether `value` is one of our ids (say, a directory name met while listing)."""
    try:
        validate_session_id(value)
    except InvalidSessionId:
        return False
    return True


def validate_session_id(value: str) -> str:
    """`value` itself if it is one of our ids; otherwise raise `InvalidSessionId`."""
    if not isinstance(value, str):
        raise InvalidSessionId(f"a session id is a string, not {type(value).__name__}", value=value)
    if not value:
        raise InvalidSessionId("the session id is empty", value=value)
    if len(value) != SESSION_ID_LENGTH or not _PATTERN.fullmatch(value):
        shown = repr(value) if len(value) <= 80 else repr(value[:80]) + "..."
        raise InvalidSessionId(f"{shown} is not a session id: ours read {_FORM}", value=value)
    try:
        _time(value)
    except ValueError:
        raise InvalidSessionId(
            f"{value!r} is not a session id: no such time", value=value
        ) from None
    return value


def session_id_time(session_id: str) -> datetime:
    """When the session with this id was created (UTC, to the second)."""
    return _time(validate_session_id(session_id))


def _time(value: str) -> datetime:
    # The id's digits as a UTC time, or ValueError for one that never was (month 13, the
    # 30th of February). What `strptime("%Y%m%dT%H%M%S")` checks for digits already
    # matched, without its module: its import and locale tables were a tenth of `show`.
    return datetime(
        int(value[0:4]),
        int(value[4:6]),
        int(value[6:8]),
        int(value[9:11]),
        int(value[11:13]),
        int(value[13:15]),
        tzinfo=UTC,
    )


def session_dir(root: Path, session_id: str) -> Path:
    """The directory of session `session_id` under the sessions root, id validated first."""
    return Path(root) / validate_session_id(session_id)
