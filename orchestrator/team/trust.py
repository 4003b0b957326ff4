"""Which projects the user trusts, with which settings: `trusted_projects.json` in the
user config dir.

A repository's files are the repository's words, not the user's. Settings that would
widen what runs (a model or provider, permission rules, more tools) take effect only once
the user has said yes to them for that project. What is remembered is a *fingerprint* of
exactly those settings, so a change to them asks again, and text that cannot widen
anything (a prompt, a description) does not.

The store is generic: whoever asks for trust computes a fingerprint of its own settings
with `fingerprint`, naming what they are (`{"agents": ...}`, `{"config": ...}`), and a
project keeps every fingerprint the user trusted (the newest `MAX_FINGERPRINTS`), so
agent definitions and a project config do not displace each other, and switching back to
a branch whose settings were trusted before does not ask again.

```json
{"version": 1, "projects": {"/home/me/src/app": ["sha256:…", "sha256:…"]}}
```

Blocking file I/O, no global state: the caller passes the directory. Two processes that
trust at the same instant may lose one of the answers (the last write wins); the cost is
one question asked again.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Final, Literal, final

import orjson
from pydantic import BaseModel, Field, ValidationError

from orchestrator.errors import ConfigError
from orchestrator.store.snapshot import write_json_atomic

TRUST_FILE: Final = "trusted_projects.json"
MAX_FINGERPRINTS: Final = 32
"""Fingerprints kept per project; the oldest goes first."""


def fingerprint(settings: Any) -> str:
    """`sha256:` and the hex digest of the canonical JSON of `settings` (keys sorted, no
    spaces): equal settings give equal fingerprints however they were written."""
    canonical = orjson.dumps(settings, option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


class _TrustFile(BaseModel, frozen=True, extra="forbid"):
    version: Literal[1] = 1
    projects: dict[str, tuple[str, ...]] = Field(default_factory=dict)


@final
class TrustStore:
    """The trusted projects of one user. `config_dir` is the user config dir (the file
    is `config_dir / "trusted_projects.json"`); nothing is read until asked."""

    def __init__(self, config_dir: Path) -> None:
        self.path = config_dir / TRUST_FILE

    def is_trusted(self, project: Path, fingerprint: str) -> bool:
        """Whether the user trusted `project` (any spelling of its directory) with
        settings of this fingerprint."""
        return fingerprint in self._read().projects.get(_key(project), ())

    def trust(self, project: Path, fingerprint: str) -> None:
        """Remember that the user trusts `project` with settings of this fingerprint."""
        data = self._read()
        key = _key(project)
        kept = [fp for fp in data.projects.get(key, ()) if fp != fingerprint]
        kept.append(fingerprint)
        projects = {**data.projects, key: tuple(kept[-MAX_FINGERPRINTS:])}
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_json_atomic(self.path, _TrustFile(projects=projects).model_dump(mode="json"))
        except OSError as exc:
            raise ConfigError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def _read(self) -> _TrustFile:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return _TrustFile()
        except OSError as exc:
            raise ConfigError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        try:
            return _TrustFile.model_validate(orjson.loads(raw))
        except (orjson.JSONDecodeError, ValidationError) as exc:
            what = (
                "not valid JSON"
                if isinstance(exc, orjson.JSONDecodeError)
                else "not a list of trusted projects"
            )
            raise ConfigError(
                f"{self.path}: {what} ({_first_line(exc)}); fix the file, "
                "or delete it to forget every trusted project (you will be asked again)"
            ) from None


def _key(project: Path) -> str:
    return os.fspath(project.resolve())


def _first_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        return f"{where}: {err['msg']}"
    return str(exc).splitlines()[0]
