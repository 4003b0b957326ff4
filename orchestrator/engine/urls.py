"""A database URL of the dbos engine: a SQLite file's, and as the journal and the screen
show one, its password hidden (docs/engine.md, "Journaled with the session")."""

from __future__ import annotations

import re
from pathlib import Path


def sqlite_url(path: Path) -> str:
    """The database URL of a SQLite file at `path`."""
    return f"sqlite:///{path}"


HIDDEN = "***"
"""What stands for a database URL's password in the journal."""

# As sqlalchemy's `make_url` reads a URL (which DBOS uses): `name://user:password@...`.
_USERINFO = re.compile(r"^(?P<scheme>[\w+]+://)(?P<user>[^:/]*):[^@]*@")
_QUERY_PASSWORD = re.compile(r"(?P<key>[?&]password=)[^&#]*")


def hide_password(url: str) -> str:
    """`url` with its password, if any, as `***`: the password in `user:password@` and a
    `password=` query parameter (libpq's). The journal keeps this form, never the
    password."""
    url = _USERINFO.sub(rf"\g<scheme>\g<user>:{HIDDEN}@", url, count=1)
    return _QUERY_PASSWORD.sub(rf"\g<key>{HIDDEN}", url)


def has_password(url: str) -> bool:
    """Whether `url` holds a password (hidden or not)."""
    return bool(_USERINFO.match(url) or _QUERY_PASSWORD.search(url))
