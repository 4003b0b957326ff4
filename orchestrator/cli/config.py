"""`orchestrator config show`: the configuration `run` would use, and where each setting
comes from. Imports no model or HTTP machinery, so it answers at once."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import orjson

from orchestrator.cli.env import config_layers
from orchestrator.cli.settings import DEFAULT, UNTRUSTED, Layered, effective_values, shown
from orchestrator.config import (
    CompactionConfig,
    EngineConfig,
    SessionConfig,
    TeamConfig,
    ToolsConfig,
    ViewConfig,
)
from orchestrator.engine.urls import hide_password
from orchestrator.text import visible


def run_config(
    args: argparse.Namespace, environ: Mapping[str, str], *, out: TextIO | None = None
) -> int:
    out = out or sys.stdout
    workspace: Path = args.workspace or Path.cwd()
    found = config_layers(args, environ, workspace, ask=None, untrusted="ignore")
    report = config_report(found)
    if args.json:
        out.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        out.write(format_report(report))
    return 0


def config_report(found: Layered) -> dict[str, dict[str, Any]]:
    """`{key: {"value": ..., "source": ...}}` for the model, every `[session]`, `[team]`,
    `[tools]`, `[compaction]`, `[view]` and `[engine]` key (a database URL with its
    password hidden) and each role's model that is set; a project setting
    left out for want of trust adds `"ignored": {"value": ..., "source": ..., "reason":
    ...}` to its key."""
    values = effective_values(found.config)
    keys = ["model"]
    keys += [f"session.{name}" for name in SessionConfig.model_fields]
    keys += [f"team.{name}" for name in TeamConfig.model_fields]
    keys += [f"tools.{name}" for name in ToolsConfig.model_fields]
    keys += [f"compaction.{name}" for name in CompactionConfig.model_fields]
    keys += [f"view.{name}" for name in ViewConfig.model_fields]
    keys += [f"engine.{name}" for name in EngineConfig.model_fields]
    keys += [f"agents.{role}.model" for role, a in sorted(found.config.agents.items()) if a.model]
    keys += [key for key in found.ignored if key not in keys]
    if url := values.get(DATABASE_URL):
        values[DATABASE_URL] = hide_password(url)
    report: dict[str, dict[str, Any]] = {}
    for key in keys:
        entry = {"value": values.get(key), "source": found.sources.get(key, DEFAULT)}
        if key in found.ignored:
            value, source = found.ignored[key]
            value = (
                hide_password(value) if key == DATABASE_URL and isinstance(value, str) else value
            )
            entry["ignored"] = {"value": value, "source": source, "reason": UNTRUSTED}
        report[key] = entry
    return report


def format_report(report: Mapping[str, Mapping[str, Any]]) -> str:
    """One line per setting: key, value, source; an ignored project setting on a line
    of its own under its key's."""
    rows: list[tuple[str, str, str]] = []
    for key, entry in report.items():
        rows.append((key, shown(entry["value"]), entry["source"]))
        if ignored := entry.get("ignored"):
            source = f"{ignored['source']} (ignored: {ignored['reason']})"
            rows.append((key, shown(ignored["value"]), source))
    key_width = max(len(key) for key, _, _ in rows)
    value_width = min(max(len(value) for _, value, _ in rows), _VALUE_WIDTH)
    lines = [f"{key:<{key_width}}  {value:<{value_width}}  {source}" for key, value, source in rows]
    if ignored_count := sum(1 for entry in report.values() if "ignored" in entry):
        lines.append(
            f"{ignored_count} setting(s) of the project config need your trust: run "
            "orchestrator in the project once at a terminal (without --yes or --json) and "
            "answer yes, or remove them from its file."
        )
    return "".join(visible(line) + "\n" for line in lines)


_VALUE_WIDTH = 32
DATABASE_URL = "engine.database_url"
