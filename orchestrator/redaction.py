"""Keeping secret values out of everything the session keeps or shows.

A `Redactor` knows the values to hide, each by the name of the variable holding it, and
replaces them by `[redacted NAME]`. It is applied where text enters the session's record
(`state/scrub.py` scrubs every event before the journal and the screen see it), so what
the model sees next, what is journaled, what a resume rebuilds and what is printed are
the same redacted text. Below every room: the session, the team and the CLI all use it.

Bytes that go to disk outside the journal (a background call's output file,
team/background.py) pass through a `StreamRedactor` as they come, which holds back what
could be the start of a secret until the next piece shows whether it is; `Redactor.masked`
redacts a window of such bytes read back at any offset, so a read that starts or stops
inside a secret shows no part of it.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import AnyStr

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
        return _start_held(text, [value for _, value in self.secrets])

    @functools.cached_property
    def in_bytes(self) -> tuple[tuple[bytes, bytes], ...]:
        """Each secret as UTF-8 bytes, with what replaces it (`[redacted NAME]`)."""
        return tuple(
            (value.encode(), f"[redacted {name}]".encode()) for name, value in self.secrets
        )

    def masked(self, data: bytes, start: int, stop: int) -> bytes:
        """`data[start:stop]` with every secret that overlaps it replaced, also one that
        only begins or ends inside it (then the part inside becomes `[redacted NAME]`).
        A reader that shows a window of a file reads `len(longest secret) - 1` bytes on
        either side of it into `data`, so that it sees every secret the window cuts."""
        spans = []
        for value, mark in self.in_bytes:
            found = data.find(value)
            while found >= 0:
                spans.append((found, found + len(value), mark))
                found = data.find(value, found + 1)
        out = bytearray()
        at = start
        for begin, end, mark in sorted(spans):
            if end <= at or begin >= stop:
                continue
            out += data[at:begin]  # empty when the secret began before `at`
            out += mark
            at = min(end, stop)
        out += data[at:stop]
        return bytes(out)

    @property
    def longest(self) -> int:
        """The length in bytes of the longest secret (0: none)."""
        return max((len(value) for value, _ in self.in_bytes), default=0)

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


class StreamRedactor:
    """Redacts bytes given piece by piece (a command's output as it comes through its
    pipe), so that a secret split across two pieces is redacted all the same: `feed`
    returns what may be written now, holding back a tail that could be the start of a
    secret until the next piece says whether it is; `end` returns what is still held
    (the stream ended: it was not a secret)."""

    def __init__(self, redactor: Redactor) -> None:
        self._secrets = redactor.in_bytes
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        if not self._secrets:
            return data
        data = self._held + data
        for value, mark in self._secrets:
            if value in data:
                data = data.replace(value, mark)
        keep = _start_held(data, [value for value, _ in self._secrets])
        self._held = data[len(data) - keep :]
        return data[: len(data) - keep]

    def end(self) -> bytes:
        rest, self._held = self._held, b""
        return rest


def _start_held(text: AnyStr, values: Iterable[AnyStr]) -> int:
    """How much of the end of `text` is the start (not the whole) of one of `values`."""
    longest = 0
    for value in values:
        for size in range(min(len(value) - 1, len(text)), longest, -1):
            if text.endswith(value[:size]):
                longest = size
                break
    return longest


def _a_path(value: str) -> bool:
    return value.startswith("/") and os.path.exists(value)


def _json_forms(value: str) -> tuple[bytes, ...]:
    raw = value.encode()
    escaped = msgspec.json.encode(value)[1:-1]
    return (raw,) if escaped == raw else (raw, escaped)
