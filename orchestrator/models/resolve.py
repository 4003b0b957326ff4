"""Turn a model spec from the command line or config (`scripted:PATH`, `openai:gpt-4o`, ...)
into a `Model`. Environment and HTTP client are passed in: nothing here reads globals."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import httpx

from orchestrator.errors import ConfigError
from orchestrator.models.base import Model

KNOWN_PREFIXES = ("scripted", "openai", "anthropic", "ollama", "openai-compatible")

USAGE_HINT = (
    "pass --model scripted:PATH (a JSON script, see docs/scripted-model.md), "
    "openai:MODEL, anthropic:MODEL, ollama:MODEL or openai-compatible:MODEL@URL"
)


def resolve_model(
    spec: str | None,
    *,
    env: Mapping[str, str],
    http: httpx.AsyncClient | None = None,
) -> Model:
    """Build the model named by `spec`, or raise `ConfigError` with one clear line."""
    if not spec:
        raise ConfigError(f"no model given: {USAGE_HINT}")
    prefix, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ConfigError(f"model {spec!r} is not PROVIDER:NAME: {USAGE_HINT}")
    if prefix == "scripted":
        from orchestrator.models.scripted import ScriptedModel

        return ScriptedModel.from_file(Path(rest))
    if prefix in KNOWN_PREFIXES:
        raise ConfigError(f"the {prefix!r} provider is not available yet: {USAGE_HINT}")
    raise ConfigError(f"unknown model provider {prefix!r}: {USAGE_HINT}")
