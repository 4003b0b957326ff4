"""`orchestrator models`, through its argparse registration and handler."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import orjson

from orchestrator.cli.models import run_models
from orchestrator.cli.parser import add_models_parser
from tests.scenes import assert_in

SECRET = "sk-very-secret-value"

CONFIG = """
model = "anthropic:claude-sonnet-4-5"

[agents.worker]
model = "ollama:qwen3:8b"

[agents.planner]
model = "openai:gpt-4.1"

[providers.openrouter]
kind = "openai"
base_url = "https://openrouter.ai/api/v1"
api_key_env = "OPENROUTER_API_KEY"

[prices."gpt-4.1"]
input = 2.0
output = 8.0
"""


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="orchestrator")
    parser.add_argument("--config", default="top-level")  # a CLI may have its own
    add_models_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def report(tmp_path: Path, env: dict[str, str], *extra: str) -> tuple[int, str]:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    out = io.StringIO()
    code = run_models(parse("models", "--config", str(path), *extra), env, out=out)
    return code, out.getvalue()


def test_lists_providers_models_and_key_presence_never_the_key(tmp_path: Path) -> None:
    code, text = report(tmp_path, {"ANTHROPIC_API_KEY": SECRET})
    assert SECRET not in text
    assert "ANTHROPIC_API_KEY set" in text
    assert "OPENAI_API_KEY not set" in text
    assert "OPENROUTER_API_KEY not set (optional)" not in text
    assert_in(
        text,
        "ollama",
        "no key needed",
        "default    anthropic:claude-sonnet-4-5",
        "planner    openai:gpt-4.1",
        "not usable: OPENAI_API_KEY is not set",
    )
    assert "gpt-4.1" in text.split("prices")[1]
    assert code == 1  # the planner's model cannot be used


def test_json_report(tmp_path: Path) -> None:
    env = {"ANTHROPIC_API_KEY": SECRET, "OPENAI_API_KEY": SECRET}
    code, text = report(tmp_path, env, "--json")
    assert SECRET not in text
    data = orjson.loads(text)
    assert code == 0
    by_name = {p["name"]: p for p in data["providers"]}
    assert by_name["openai"]["key_present"] is True
    assert by_name["openrouter"]["key_present"] is False
    assert by_name["openai-compatible"]["base_url"] is None
    assert [m["role"] for m in data["models"]] == ["default", "planner", "worker"]
    assert all(m["ready"] for m in data["models"])


def test_top_level_config_option_is_not_clobbered() -> None:
    assert parse("models").config == "top-level"


def test_missing_default_config_is_fine(tmp_path: Path) -> None:
    out = io.StringIO()
    env = {"ORCHESTRATOR_CONFIG": str(tmp_path / "none.toml")}
    code = run_models(argparse.Namespace(json=False), env, out=out)
    assert code == 0
    assert "(not found: defaults)" in out.getvalue()
    assert "none configured" in out.getvalue()
