"""Where the command line finds things: the sessions root and the config file. With
the other `cli*` modules, the only code that reads environment variables and platformdirs."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

if TYPE_CHECKING:
    from orchestrator.config import Config


def default_config_path(env: Mapping[str, str]) -> Path:
    """`$ORCHESTRATOR_CONFIG`, else `config.toml` in the user config dir."""
    if env.get("ORCHESTRATOR_CONFIG"):
        return Path(env["ORCHESTRATOR_CONFIG"])
    return Path(platformdirs.user_config_dir("orchestrator")) / "config.toml"


def user_config_dir(env: Mapping[str, str]) -> Path:
    """Where the user's agent definitions (`agents/*.toml`) and trusted projects live:
    `$ORCHESTRATOR_CONFIG_DIR`, else the platform's user config dir."""
    if env.get("ORCHESTRATOR_CONFIG_DIR"):
        return Path(env["ORCHESTRATOR_CONFIG_DIR"])
    return Path(platformdirs.user_config_dir("orchestrator"))


def sessions_root(args: argparse.Namespace) -> Path:
    if getattr(args, "sessions_dir", None):
        return Path(args.sessions_dir)
    if os.environ.get("ORCHESTRATOR_SESSIONS_DIR"):
        return Path(os.environ["ORCHESTRATOR_SESSIONS_DIR"])
    return Path(platformdirs.user_data_dir("orchestrator")) / "sessions"


def load_user_config(args: argparse.Namespace) -> Config:
    from orchestrator.config import load_config  # its schemas cost more than `list` itself

    given: Path | None = getattr(args, "config", None)
    return load_config(given or default_config_path(os.environ), missing_ok=given is None)
