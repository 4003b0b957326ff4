"""Keeping secret values out of everything the session keeps or shows.

A `Redactor` knows the values to hide, each by the name of the variable holding it, and
replaces them by `[redacted NAME]`. It is applied where text enters the session's record
(`state/scrub.py` scrubs every event before the journal and the screen see it), so what
the model sees next, what is journaled, what a resume rebuilds and what is printed are
the same redacted text. Below every room: the session, the team and the CLI all use it.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import msgspec

MIN_SECRET = 8  # shorter values would redact ordinary words
SECRET_PATTERNS = ("*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*")


def looks_secret(name: str) -> bool:
    """Whether a variable's name looks like it holds a secret (KEY, SECRET, TOKEN or
    PASSWORD in it, in any case)."""
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_PATTERNS)


@dataclass(frozen=True)
class Redactor:
    """Replaces known secret values (by the name of the variable holding each) in text.
    An empty one (the default) changes nothing and is false."""

    secrets: tuple[tuple[str, str], ...] = ()  # (variable name, value), longest first

    @classmethod
    def of(cls, names: Iterable[str], environ: Mapping[str, str]) -> Redactor:
        """The values of the variables `names` (those set, of at least MIN_SECRET
        characters)."""
        found = {
            (name, environ[name]) for name in names if len(environ.get(name, "")) >= MIN_SECRET
        }
        return cls(tuple(sorted(found, key=lambda item: (-len(item[1]), item[0]))))

    @classmethod
    def for_environment(cls, keys: Iterable[str], environ: Mapping[str, str]) -> Redactor:
        """The providers' key variables `keys`, and every variable of `environ` whose
        name looks secret, but for those that name a file or directory that exists
        (`SSL_KEY_FILE=/etc/ssl/key.pem` is where a secret is, not one)."""
        found = {name for name in environ if looks_secret(name) and not _a_path(environ[name])}
        return cls.of({*keys, *found}, environ)

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def __call__(self, text: str) -> str:
        for name, value in self.secrets:
            if value in text:
                text = text.replace(value, f"[redacted {name}]")
        return text

    def found_in(self, encoded: bytes) -> bool:
        """Whether JSON `encoded` holds a secret (as it is, or escaped as JSON escapes it
        inside a string)."""
        return any(form in encoded for form in self._forms)

    @functools.cached_property
    def _forms(self) -> tuple[bytes, ...]:
        return tuple(form for _, value in self.secrets for form in _json_forms(value))

    def held(self, text: str) -> int:
        """How many characters at the end of `text` could be the start of a secret that
        the next piece of a stream completes: a stream shows all but those, for now."""
        longest = 0
        for _, value in self.secrets:
            for size in range(min(len(value) - 1, len(text)), longest, -1):
                if text.endswith(value[:size]):
                    longest = size
                    break
        return longest

    def scrub(self, value: object) -> object:
        """`value` (strings, and lists, tuples and dicts of them, as `msgspec.to_builtins`
        gives) with every string redacted."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, list | tuple):
            return [self.scrub(item) for item in value]
        if isinstance(value, dict):
            return {key: self.scrub(item) for key, item in value.items()}
        return value


def _a_path(value: str) -> bool:
    return value.startswith("/") and os.path.exists(value)


def _json_forms(value: str) -> tuple[bytes, ...]:
    raw = value.encode()
    escaped = msgspec.json.encode(value)[1:-1]
    return (raw,) if escaped == raw else (raw, escaped)
