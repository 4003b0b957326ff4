"""Secrets stay out of tool processes, out of the record, and off plain http."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from orchestrator.config import parse_config
from orchestrator.errors import ConfigError
from orchestrator.models.openai import OpenAIChatModel
from orchestrator.models.resolve import key_variables, resolve_model
from orchestrator.tools import EnvPolicy, Redactor

ENV = {
    "PATH": "/usr/bin",
    "HOME": "/home/me",
    "LANG": "C.UTF-8",
    "OPENAI_API_KEY": "sk-openai-0123456789",
    "github_token": "ghp_abcdefghij",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-value",
    "DB_PASSWORD": "hunter2hunter2",
    "OPENROUTER_CREDS": "or-0123456789",
    "EDITOR": "vi",
}


def test_the_default_policy_drops_secret_looking_names_and_the_key_variables() -> None:
    env = EnvPolicy(always_drop=frozenset({"OPENROUTER_CREDS"})).apply(ENV)
    assert sorted(env) == ["EDITOR", "HOME", "LANG", "PATH"]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (EnvPolicy(inherit="core"), ["HOME", "LANG", "PATH"]),
        (EnvPolicy(inherit="none", set={"CI": "1"}), ["CI"]),
        (EnvPolicy(include_only=("P*", "E*")), ["EDITOR", "PATH"]),
        (EnvPolicy(exclude=("EDIT*",)), ["HOME", "LANG", "OPENROUTER_CREDS", "PATH"]),
        # Keeping secrets still never passes the providers' own key variables on.
        (
            EnvPolicy(keep_secrets=True, always_drop=frozenset({"OPENAI_API_KEY"})),
            sorted(set(ENV) - {"OPENAI_API_KEY"}),
        ),
    ],
)
def test_policy_settings(policy: EnvPolicy, expected: list[str]) -> None:
    assert sorted(policy.apply(ENV)) == expected


def test_the_redactor_names_what_it_hides_and_leaves_short_values() -> None:
    redact = Redactor.of(["OPENAI_API_KEY", "SHORT", "MISSING"], {**ENV, "SHORT": "abc"})
    text = "key=sk-openai-0123456789 and abc"
    assert redact(text) == "key=[redacted OPENAI_API_KEY] and abc"


def test_key_variables_include_configured_providers() -> None:
    config = parse_config(
        '[providers.router]\nkind = "openai"\nbase_url = "https://x/v1"\napi_key_env = "R_CREDS"\n'
    )
    assert {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "R_CREDS"} <= set(
        key_variables(env={}, config=config)
    )


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://localhost:8000/v1", True),
        ("http://[::1]:8000/v1", True),
        ("https://llm.example.com/v1", True),
        ("http://llm.example.com/v1", False),
        ("http://10.0.0.7:8000/v1", False),
    ],
)
def test_a_key_is_never_sent_over_plain_http_to_another_host(url: str, allowed: bool) -> None:
    env = {"OPENAI_API_KEY": "sk-test-0123456789", "OPENAI_BASE_URL": url}
    if allowed:
        resolve_model("openai:gpt-4.1", env=env)
    else:
        with pytest.raises(ConfigError, match="unencrypted"):
            resolve_model("openai:gpt-4.1", env=env)
        config = parse_config("[providers.openai]\nallow_key_over_http = true\n")
        resolve_model("openai:gpt-4.1", env=env, config=config)
    # A key sent only by convention (openai-compatible) is left out instead.
    model = resolve_model(f"openai-compatible:m@{url}", env=env)
    assert isinstance(model, OpenAIChatModel)
    assert (model.endpoint.api_key is not None) == allowed


def test_a_run_keeps_keys_out_of_commands_journal_snapshot_and_output(tmp_path: Path) -> None:
    key = "sk-live-abcdefghijklmnop"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".env").write_text(f"OPENAI_API_KEY={key}\n")  # a user's file, say
    script = tmp_path / "script.json"
    calls = [
        {"name": "shell", "arguments": {"command": "env"}},
        {"name": "read_file", "arguments": {"path": ".env"}},
        {"name": "shell", "arguments": {"command": "cat .env; echo $OPENAI_API_KEY"}},
    ]
    replies = [{"tool_calls": [call]} for call in calls] + [{"text": "done"}]
    script.write_bytes(orjson.dumps({"agents": {"main": replies}}))
    root = tmp_path / "sessions"
    env = {**os.environ, "OPENAI_API_KEY": key, "MY_SERVICE_TOKEN": "tok-0123456789"}
    command = [sys.executable, "-m", "orchestrator", "run", "g", "--model", f"scripted:{script}"]
    command += ["-w", str(workspace), "--yes", "--json", "--sessions-dir", str(root)]
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    events = [orjson.loads(line) for line in result.stdout.splitlines()]
    outputs = [e["result"]["content"] for e in events if e["kind"] == "tool_call_finished"]
    assert "OPENAI_API_KEY" not in outputs[0]  # the command never had it
    assert "MY_SERVICE_TOKEN" not in outputs[0]
    assert "PATH=" in outputs[0]
    # What a tool read back is redacted before the model, the journal or the screen.
    assert outputs[1] == "OPENAI_API_KEY=[redacted OPENAI_API_KEY]\n"
    assert "[redacted OPENAI_API_KEY]" in outputs[2]
    [session] = list(root.iterdir())
    for path in session.iterdir():
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path.name
    assert key not in result.stdout
    assert key not in result.stderr


def _run(root: Path, env: dict[str, str], *arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "orchestrator", *arguments, "--sessions-dir", str(root)]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


def _nowhere(secret: str, root: Path, *outputs: str) -> None:
    for path in root.rglob("*"):
        # (script.json is the scripted model's copy of its replies: the model, not a record)
        if path.is_file() and path.name != "script.json":
            assert secret.encode() not in path.read_bytes(), path
    for output in outputs:
        assert secret not in output


def test_secrets_the_model_or_the_person_writes_are_redacted_before_anything_keeps_them(
    tmp_path: Path,
) -> None:
    key = "sk-live-abcdefghijklmnop"
    token = "tok-service-0123456789"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    main = [
        {
            "text": f"the key is {key}",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "k.txt", "content": f"K={key}\n"}},
                {"name": "shell", "arguments": {"command": f"echo {token} > s.txt; echo {key}"}},
            ],
        },
        {
            "tool_calls": [
                {
                    "name": "delegate",
                    "arguments": {"description": f"use {token}", "prompt": f"with {key}"},
                }
            ]
        },
        {"tool_calls": [{"name": "wait_tasks", "arguments": {}}]},
        {"text": "done"},
        {"text": "noted"},  # the resumed turn
    ]
    worker = [{"tool_calls": [{"name": "complete", "arguments": {"summary": f"used {key}"}}]}]
    script.write_bytes(orjson.dumps({"agents": {"main": main, "t1": worker}}))
    root = tmp_path / "sessions"
    env = {**os.environ, "OPENAI_API_KEY": key, "MY_SERVICE_TOKEN": token}
    model = f"scripted:{script}"
    first = _run(root, env, "run", f"goal {key}", "--model", model, "-w", str(workspace), "--yes")
    assert first.returncode == 0, first.stderr
    # The calls ran as they were journaled: redacted, so a re-run does the same.
    assert (workspace / "k.txt").read_text() == "K=[redacted OPENAI_API_KEY]\n"
    assert (workspace / "s.txt").read_text() == "[redacted MY_SERVICE_TOKEN]\n"
    assert "[redacted OPENAI_API_KEY]" in first.stdout
    [session] = [p.name for p in root.iterdir()]
    said = f"the key is {key}, the token {token}"
    second = _run(root, env, "resume", session, "--message", said, "--json")
    assert second.returncode == 0, second.stderr
    assert "[redacted MY_SERVICE_TOKEN]" in second.stdout
    shown = _run(root, env, "sessions", "show", session, "--json")
    assert "used [redacted OPENAI_API_KEY]" in shown.stdout
    for secret in (key, token):
        _nowhere(secret, root, first.stdout, first.stderr, second.stdout, second.stderr)
        _nowhere(secret, workspace, shown.stdout)
