"""What the shell tool's commands see of orchestrator's environment, and keeping secrets
out of what the model and the journal see.

`EnvPolicy` decides which variables a command inherits (after Codex CLI's
`shell_environment_policy`): by default every variable except those whose names look
like secrets (contain KEY, SECRET, TOKEN or PASSWORD, in any case) and the variables that
hold the configured providers' API keys. `Redactor` replaces the values of those keys by
`[redacted NAME]` in any text about to enter a context, the journal or the screen, so
that what the model sees, what is journaled and what a resume rebuilds stay identical.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

Inherit = Literal["all", "core", "none"]

SECRET_PATTERNS = ("*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*")
CORE = (
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "USER",
    "USERNAME",
    "TMPDIR",
    "TEMP",
    "TMP",
    "LANG",
    "LC_ALL",
    "TERM",
)


def _matches(name: str, patterns: Iterable[str]) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in patterns)


@dataclass(frozen=True)
class EnvPolicy:
    """`inherit`: all variables, the `core` few (PATH, HOME, ...) or none; then, unless
    `keep_secrets`, the secret-looking names are dropped; then `exclude` patterns are
    dropped and, if given, only `include_only` patterns kept; `always_drop` (the
    providers' key variables) is dropped whatever the patterns say; `set` comes last."""

    inherit: Inherit = "all"
    keep_secrets: bool = False
    exclude: tuple[str, ...] = ()
    include_only: tuple[str, ...] = ()
    set: Mapping[str, str] = field(default_factory=dict)
    always_drop: frozenset[str] = frozenset()

    def apply(self, environ: Mapping[str, str]) -> dict[str, str]:
        if self.inherit == "none":
            env: dict[str, str] = {}
        elif self.inherit == "core":
            env = {k: v for k, v in environ.items() if k.upper() in CORE}
        else:
            env = dict(environ)
        drop = [*(() if self.keep_secrets else SECRET_PATTERNS), *self.exclude]
        env = {k: v for k, v in env.items() if not _matches(k, drop)}
        if self.include_only:
            env = {k: v for k, v in env.items() if _matches(k, self.include_only)}
        env = {k: v for k, v in env.items() if k not in self.always_drop}
        env.update(self.set)
        return env


MIN_SECRET = 8  # shorter values would redact ordinary words


@dataclass(frozen=True)
class Redactor:
    """Replaces known secret values (by the name of the variable holding each) in text."""

    secrets: tuple[tuple[str, str], ...] = ()  # (variable name, value), longest first

    @classmethod
    def of(cls, names: Iterable[str], environ: Mapping[str, str]) -> Redactor:
        found = {
            (name, environ[name]) for name in names if len(environ.get(name, "")) >= MIN_SECRET
        }
        return cls(tuple(sorted(found, key=lambda item: -len(item[1]))))

    def __call__(self, text: str) -> str:
        for name, value in self.secrets:
            if value in text:
                text = text.replace(value, f"[redacted {name}]")
        return text
