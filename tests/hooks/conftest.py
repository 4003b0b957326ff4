"""Hooks through the command line, with real commands: a Python script the config's
`[[hooks]]` run, which logs every event it is given (one JSON line each) and answers as
its arguments say."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.scenes import orchestrator

HOOK = Path(__file__).with_name("hook_app.py")


@dataclass
class Scene:
    """A user config dir, a workspace, a sessions dir and a hook's log under tmp_path."""

    root: Path

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def sessions(self) -> Path:
        return self.root / "s"

    @property
    def log(self) -> Path:
        return self.root / "asked.jsonl"

    def hook(self, how: str, **more: str) -> str:
        """The command of the hook app answering as `how` says (hook_app.py)."""
        words = [sys.executable, str(HOOK), str(self.log), how]
        words += [f"{k}={v}" for k, v in more.items()]
        return shlex.join(words)

    def config(self, *hooks: dict[str, Any]) -> None:
        lines = []
        for hook in hooks:
            lines.append("[[hooks]]")
            lines += [f"{key} = {orjson.dumps(value).decode()}" for key, value in hook.items()]
        (self.root / "user" / "config.toml").write_text("\n".join(lines) + "\n")

    def script(self, *replies: dict[str, Any], **more: Any) -> Path:
        path = self.root / "script.json"
        path.write_bytes(orjson.dumps({"version": 1, "agents": {"main": list(replies)}, **more}))
        return path

    def run(self, *extra: str, script: Path | None = None) -> Any:
        argv = ["run", "go", "--model", f"scripted:{script or self.root / 'script.json'}"]
        return orchestrator(*argv, "-w", str(self.work), "--yes", "--json", *extra)

    def ran(self, *replies: dict[str, Any], **more: Any) -> Any:
        """A run of these replies (`script`, then `run`), which must succeed."""
        self.script(*replies, **more)
        done = self.run()
        assert done.returncode == 0, done.stderr
        return done

    def asked(self) -> list[dict[str, Any]]:
        """The events the hook was given, in order."""
        if not self.log.exists():
            return []
        return [orjson.loads(line) for line in self.log.read_text().splitlines()]

    def journal(self) -> list[dict[str, Any]]:
        (session,) = self.sessions.iterdir()
        lines = (session / "journal.jsonl").read_text().splitlines()
        return [orjson.loads(line) for line in lines]

    def records(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.journal() if r["k"] == kind]


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scene:
    made = Scene(tmp_path)
    for name in ("user", "work"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("ORCHESTRATOR_CONFIG_DIR", str(tmp_path / "user"))
    monkeypatch.setenv("ORCHESTRATOR_SESSIONS_DIR", str(made.sessions))
    return made


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def events(stdout: str, kind: str) -> list[dict[str, Any]]:
    found = [orjson.loads(line) for line in stdout.splitlines()]
    return [e for e in found if e["kind"] == kind]


Run = Callable[..., Any]
