"""Hooks of a task on a dbos worker (docs/hooks.md): its turns run there with the
worker's hooks (its config's `[[hooks]]`, or its workspace's when the worker's user
trusts the project), and each decision that changed something is journaled in the
task's own journal, in the engine's database, as a session's is in its journal."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.importorskip("dbos")

from orchestrator.engine.store import Store
from tests.engine.sessions import Setup, main_script
from tests.hooks.conftest import HOOK
from tests.scenes import call

SCRIPT: dict[str, Any] = {
    "agents": {
        "main": main_script(call("delegate", description="a", prompt="write", write_scope=["."])),
        "t1": [
            {"tool_calls": [call("write_file", path="secret.txt", content="S")]},
            {"tool_calls": [call("write_file", path="a.txt", content="A")]},
            {"tool_calls": [call("complete", summary="wrote a")]},
        ],
    }
}


def _hook(log: Path, how: str, **more: str) -> str:
    words = [sys.executable, str(HOOK), str(log), how, *(f"{k}={v}" for k, v in more.items())]
    return shlex.join(words)


async def test_a_task_on_a_worker_runs_with_the_worker_s_hooks(tmp_path: Path) -> None:
    setup = Setup(tmp_path, SCRIPT)
    log = tmp_path / "asked.jsonl"
    refuse = _hook(log, "refuse-if", pattern="secret", reason="not the secrets")
    note = _hook(log, "note", text="checked")
    (tmp_path / "worker.toml").write_text(
        "".join(
            f'[[hooks]]\nevent = "{event}"\ntools = ["write_file"]\n'
            f"command = {orjson.dumps(command).decode()}\n"
            for event, command in (("pre_tool", refuse), ("post_tool", note))
        )
    )
    await setup.on_a_worker()
    assert not (setup.workspace / "secret.txt").exists()
    assert (setup.workspace / "a.txt").read_text() == "A"
    store = Store(setup.url)
    records = [orjson.loads(line) for _, line in store.records(f"{setup.session_id}/t1")]
    store.close()
    refused, written, _ = [r for r in records if r["k"] == "call_result"]
    assert refused["content"] == (
        "write_file was refused by a hook: not the secrets; do not retry it"
    )
    assert written["content"].endswith("\n\nNote from a hook: checked")
    decided = [(r["event"], r["action"], r["ref"]) for r in records if r["k"] == "hook_decided"]
    assert decided == [
        ("pre_tool", "refuse", refused["ref"]),
        ("post_tool", "note", written["ref"]),
    ]
    # None of it in the session's own journal: the task's records are the task's.
    assert not setup.journal_lines('"k":"hook_decided"')
    asked = [orjson.loads(line) for line in log.read_text().splitlines()]
    assert {(e["agent"], e["role"], e["session"]) for e in asked} == {
        ("t1", "worker", setup.session_id)
    }


def test_a_worker_runs_a_project_s_hooks_only_once_its_user_trusts_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.cli.env import effective_config, load_user_config
    from orchestrator.cli.parser import build_parser
    from orchestrator.cli.worker import workspace_hooks

    monkeypatch.setenv("ORCHESTRATOR_CONFIG_DIR", str(tmp_path / "user"))
    monkeypatch.delenv("ORCHESTRATOR_CONFIG", raising=False)
    (tmp_path / "user").mkdir()
    project = tmp_path / "ws" / ".orchestrator"
    project.mkdir(parents=True)
    args = build_parser().parse_args(["worker", "--database-url", "sqlite:///x"])
    config = load_user_config(args)
    assert workspace_hooks(args, config, tmp_path / "ws") == ()  # (no [[hooks]] anywhere)
    (project / "config.toml").write_text('[[hooks]]\nevent = "stop"\ncommand = "true"\n')
    assert workspace_hooks(args, config, tmp_path / "ws") == ()  # not trusted here
    # Trusted as `run` trusts it, asking its user at a terminal (a worker never asks).
    run = build_parser().parse_args(["run", "goal"])
    effective_config(run, os.environ, tmp_path / "ws", ask=lambda question: True)
    (hook,) = workspace_hooks(args, config, tmp_path / "ws")
    assert (hook.event, hook.run) == ("stop", "true")


async def test_a_worker_reads_a_project_s_hooks_again_only_once_a_file_of_them_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every task asks: whether the project's config names hooks is read again only when
    # its stat changed (or changed lately: its next change may not show), and the hooks
    # themselves only when a file of their layers changed, the trust store among them.
    from orchestrator import stamps
    from orchestrator.cli import worker
    from orchestrator.cli.env import effective_config, load_user_config
    from orchestrator.cli.parser import build_parser

    monkeypatch.setenv("ORCHESTRATOR_CONFIG_DIR", str(tmp_path / "user"))
    monkeypatch.delenv("ORCHESTRATOR_CONFIG", raising=False)
    (tmp_path / "user").mkdir()
    root = tmp_path / "ws"
    (root / ".orchestrator").mkdir(parents=True)
    path = root / ".orchestrator" / "config.toml"
    args = build_parser().parse_args(["worker", "--database-url", "sqlite:///x"])
    config = load_user_config(args)
    hooks = worker.ProjectHooks()
    assert await hooks.of(args, config, root) == ()  # (no file: read once, found empty)
    assert await hooks.of(args, config, root) == ()
    path.write_text('model = "scripted:s.json"\n')
    assert await hooks.of(args, config, root) == ()
    assert await hooks.of(args, config, root) == ()
    assert hooks.named.reads == 3  # changed just now: its stat may not show the next change
    monkeypatch.setattr(stamps, "RACY_NS", 0)
    assert await hooks.of(args, config, root) == ()
    assert await hooks.of(args, config, root) == ()
    assert hooks.named.reads == 4
    path.write_text('[[hooks]]\nevent = "stop"\ncommand = "true"\n')
    assert await hooks.of(args, config, root) == ()  # named, but the project not trusted
    assert await hooks.of(args, config, root) == ()
    assert (hooks.named.reads, hooks.loaded.reads) == (5, 1)
    run = build_parser().parse_args(["run", "goal"])
    effective_config(run, os.environ, root, ask=lambda question: True)  # trusted
    (hook,) = await hooks.of(args, config, root)
    assert (hook.event, hook.run) == ("stop", "true")
    assert await hooks.of(args, config, root) == (hook,)
    assert (hooks.named.reads, hooks.loaded.reads) == (5, 2)
