"""`orchestrator models`: which providers and models are configured, and whether each
API key is present. It names the variables; it never prints a key."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import orjson

from orchestrator.cli.env import default_config_path
from orchestrator.config import Config, load_config
from orchestrator.errors import OrchestratorError
from orchestrator.models.resolve import ProviderInfo, provider_info, provider_names, resolve_model


def run_models(
    args: argparse.Namespace,
    env: Mapping[str, str],
    *,
    config: Config | None = None,
    out: TextIO | None = None,
) -> int:
    """Print the report; 0 if every configured model is usable, else 1. A config file
    given with --config must exist; the default one may be absent. `models test SPEC`
    is `cli.model_probe`'s."""
    out = out or sys.stdout
    given: Path | None = getattr(args, "config", None)
    path = given or default_config_path(env)
    found = path.is_file()
    if config is None:
        config = load_config(path, missing_ok=given is None)
    if getattr(args, "models_command", None) == "test":
        from orchestrator.cli.model_probe import run_model_test

        as_json = bool(getattr(args, "json", False))
        return run_model_test(
            args.spec, env, config, timeout=args.timeout, as_json=as_json, out=out
        )
    report = models_report(config, env)
    report["config"] = {"path": str(path), "found": found}
    if getattr(args, "json", False):
        out.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        out.write(format_report(report))
    return 0 if all(m["ready"] for m in report["models"]) else 1


def models_report(config: Config, env: Mapping[str, str]) -> dict[str, Any]:
    providers = [_provider_row(name, config, env) for name in provider_names(config)]
    models: list[dict[str, Any]] = []
    default = config.model or env.get("ORCHESTRATOR_MODEL")
    if default:
        source = "config" if config.model else "ORCHESTRATOR_MODEL"
        models.append(_model_row("default", default, source, config, env))
    for role, agent in sorted(config.agents.items()):
        if agent.model:
            models.append(_model_row(role, agent.model, f"[agents.{role}]", config, env))
    prices = {name: price.model_dump(exclude_none=True) for name, price in config.prices.items()}
    return {"providers": providers, "models": models, "prices": prices}


def _provider_row(name: str, config: Config, env: Mapping[str, str]) -> dict[str, Any]:
    try:
        info = provider_info(name, env=env, config=config)
    except OrchestratorError as exc:
        return {"name": name, "error": str(exc)}
    return {
        "name": name,
        "kind": info.kind,
        "base_url": info.base_url,
        "key_env": info.key_env,
        "key_required": info.key_required,
        "key_present": info.key(env) is not None,
        "key": _key_status(info, env),
    }


def _key_status(info: ProviderInfo, env: Mapping[str, str]) -> str:
    if info.key_env is None:
        return "no key needed"
    present = "set" if info.key(env) is not None else "not set"
    return f"{info.key_env} {present}" + ("" if info.key_required else " (optional)")


def _model_row(
    role: str, spec: str, source: str, config: Config, env: Mapping[str, str]
) -> dict[str, Any]:
    try:
        resolve_model(spec, env=env, config=config)
    except OrchestratorError as exc:
        return {"role": role, "model": spec, "source": source, "ready": False, "problem": str(exc)}
    return {"role": role, "model": spec, "source": source, "ready": True, "problem": None}


def format_report(report: dict[str, Any]) -> str:
    config = report["config"]
    lines = [f"config: {config['path']}" + ("" if config["found"] else " (not found: defaults)")]
    lines += ["", "providers:"]
    for p in report["providers"]:
        if "error" in p:
            lines.append(f"  {p['name']:<18} error: {p['error']}")
            continue
        url = p["base_url"] or "(per model: MODEL@URL)"
        lines.append(f"  {p['name']:<18} {p['kind']:<10} {url:<36} {p['key']}")
    lines += ["", "models:"]
    if not report["models"]:
        lines.append(
            "  none configured: pass --model, set ORCHESTRATOR_MODEL or `model` in the config"
        )
    for m in report["models"]:
        status = "ready" if m["ready"] else f"not usable: {m['problem']}"
        lines.append(f"  {m['role']:<10} {m['model']:<40} {status}  ({m['source']})")
    if report["prices"]:
        lines += ["", "prices (dollars per million tokens):"]
        for name, price in sorted(report["prices"].items()):
            detail = ", ".join(f"{k} {v:g}" for k, v in price.items())
            lines.append(f"  {name:<40} {detail}")
    return "\n".join(lines) + "\n"
