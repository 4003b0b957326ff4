"""What the shell tool's commands see of orchestrator's environment, and keeping secrets
out of what the model and the journal see.

`EnvPolicy` decides which variables a command inherits (after Codex CLI's
`shell_environment_policy`): by default every variable except those whose names look
like secrets (contain KEY, SECRET, TOKEN or PASSWORD, in any case) and the variables that
hold the configured providers' API keys. `Redactor` (orchestrator/redaction.py) replaces
the values of those variables by `[redacted NAME]` in everything the session records or
shows.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from orchestrator.redaction import SECRET_PATTERNS, Redactor

__all__ = ["SECRET_PATTERNS", "EnvPolicy", "Inherit", "Redactor"]

Inherit = Literal["all", "core", "none"]

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
    providers' key variables) is dropped whatever the patterns say; `set` comes last.
    `trace_parent`, when the run is traced: the `TRACEPARENT` of a call, by its ref
    (the shell sets it, so that a traced command's spans join the call's)."""

    inherit: Inherit = "all"
    keep_secrets: bool = False
    exclude: tuple[str, ...] = ()
    include_only: tuple[str, ...] = ()
    set: Mapping[str, str] = field(default_factory=dict)
    always_drop: frozenset[str] = frozenset()
    trace_parent: Callable[[str], str] | None = None

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
