"""Where the command line finds things: the sessions root and the config files, and
the one configuration they make with the command line's flags. With the other `cli*`
modules, the only code that reads environment variables and platformdirs."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import platformdirs

if TYPE_CHECKING:
    from orchestrator.cli.settings import Layer, Layered
    from orchestrator.config import Config
    from orchestrator.prices.cost import Price

PROJECT_CONFIG: Final = Path(".orchestrator") / "config.toml"
"""The project's config file, under the workspace."""

# The flags of `run` and `resume` that set a `[session]` key: (dest, flag, key).
SESSION_FLAGS: Final = (
    ("serial", "--serial", "serial"),
    ("verify", "--verify", "verify"),
    ("max_auto_continues", "--max-auto-continues", "max_auto_continues"),
    ("budget_rounds", "--budget-rounds", "budget_rounds"),
    ("budget_tokens", "--budget-tokens", "budget_tokens"),
    ("budget_cost", "--budget-cost", "budget_cost"),
    ("budget_time", "--budget-time", "budget_wall"),
)


def default_config_path(env: Mapping[str, str]) -> Path:
    """`$ORCHESTRATOR_CONFIG`, else the user's config file."""
    if env.get("ORCHESTRATOR_CONFIG"):
        return Path(env["ORCHESTRATOR_CONFIG"])
    return user_config_file(env)


def user_config_file(env: Mapping[str, str]) -> Path:
    """`config.toml` in the user config dir (`user_config_dir`)."""
    return user_config_dir(env) / "config.toml"


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
    """The user's config, then `--config FILE` or `$ORCHESTRATOR_CONFIG` over it (for
    commands that have no workspace: `sessions show`, `models`)."""
    config, _ = effective_config(args, os.environ, None)
    return config


def user_prices(args: argparse.Namespace) -> Mapping[str, Price]:
    """The prices of `load_user_config(args)` (`sessions show`). When no config file to
    read has a `[prices]` table there are none, known without loading the config's
    schemas (pydantic); a file that cannot be read or parsed is left to the full load,
    which says what is wrong with it."""
    files = [(user_config_file(os.environ), True)]
    given = _given_config(args, os.environ)
    if given is not None:
        files.append(given[1:])
    try:
        # (A `--config` file that is missing is read, and fails: the full load says so.)
        tables = [_toml(path) for path, missing_ok in files if not missing_ok or path.exists()]
        if not any("prices" in table for table in tables):
            return {}
    except (OSError, UnicodeDecodeError, ValueError):  # (tomllib's errors are ValueErrors)
        pass
    return load_user_config(args).prices


def _toml(path: Path) -> dict[str, object]:
    import tomllib  # (only when there is a file to read)

    return tomllib.loads(path.read_text(encoding="utf-8"))


def effective_config(
    args: argparse.Namespace,
    environ: Mapping[str, str],
    workspace: Path | None,
    *,
    ask: Callable[[str], bool] | None = None,
) -> tuple[Config, dict[str, str]]:
    """The configuration of a command, and where each setting came from.

    Layers, each over the one before, key by key (see settings.py): the user's config
    file, the project's `<workspace>/.orchestrator/config.toml`, `--config FILE` (which
    must exist) or `$ORCHESTRATOR_CONFIG`, then the `[session]` flags in `args` (see
    `SESSION_FLAGS`; absent or None ones are not given). The provenance map has every
    effective leaf key (`session.budget_rounds`, `team.max_live`, `model`, ...) and its
    source: "default", "user config PATH", "project config PATH", "--config PATH",
    "$ORCHESTRATOR_CONFIG PATH" or "command line --FLAG".

    Project settings that would widen anything need the user's trust: remembered in
    the trust store, or asked with `ask` (None: nobody to ask); otherwise `ConfigError`
    naming the file, the settings and how to trust them. Every problem of a file is a
    `ConfigError` naming the file and the key."""
    found = config_layers(args, environ, workspace, ask=ask, untrusted="refuse")
    return found.config, found.sources


def config_layers(
    args: argparse.Namespace,
    environ: Mapping[str, str],
    workspace: Path | None,
    *,
    ask: Callable[[str], bool] | None,
    untrusted: Literal["refuse", "ignore"],
) -> Layered:
    """`effective_config` with the whole answer: what an untrusted project config could
    not set (`untrusted="ignore"` leaves it out instead of refusing)."""
    from orchestrator.cli.settings import Layer, Project, layered
    from orchestrator.config import read_config_data  # its schemas cost more than `list`
    from orchestrator.team.trust import TrustStore

    layers: list[Layer] = []

    def add(label: str, path: Path, *, missing_ok: bool = True, project: bool = False) -> None:
        path = path.absolute()
        data = read_config_data(path, missing_ok=missing_ok, source=f"{label} {path}")
        if data is not None:
            layers.append(Layer(f"{label} {path}", data, path=path, project=project))

    own = user_config_file(environ)
    add("user config", own)
    project = None
    if workspace is not None:
        add("project config", workspace / PROJECT_CONFIG, project=True)
        trust = TrustStore(user_config_dir(environ))
        project = Project(workspace, trust, ask, own_config=own)
    given = _given_config(args, environ)
    if given is not None:
        label, path, missing_ok = given
        add(label, path, missing_ok=missing_ok)
    layers.extend(_flag_layers(args))
    return layered(layers, project=project, untrusted=untrusted)


def config_files(
    args: argparse.Namespace, environ: Mapping[str, str], workspace: Path
) -> list[Path]:
    """The files `config_layers` reads for `workspace` (the project's trust store with
    them): what says that its answer may have changed."""
    from orchestrator.team.trust import TRUST_FILE

    files = [user_config_file(environ), workspace / PROJECT_CONFIG]
    files.append(user_config_dir(environ) / TRUST_FILE)
    given = _given_config(args, environ)
    return [*files, given[1]] if given is not None else files


def _given_config(
    args: argparse.Namespace, environ: Mapping[str, str]
) -> tuple[str, Path, bool] | None:
    """The config file named for this command, over the user's and the project's: its
    label, path and whether it may be missing. `--config FILE` must exist;
    `$ORCHESTRATOR_CONFIG` may name a file not there (yet)."""
    given: Path | None = getattr(args, "config", None)
    if given is not None:
        return "--config", given, False
    if environ.get("ORCHESTRATOR_CONFIG"):
        return "$ORCHESTRATOR_CONFIG", Path(environ["ORCHESTRATOR_CONFIG"]), True
    return None


def _flag_layers(args: argparse.Namespace) -> list[Layer]:
    from orchestrator.cli.settings import Layer

    layers = []
    for dest, flag, key in SESSION_FLAGS:
        value: Any = getattr(args, dest, None)
        if value is None:
            continue
        if value is False and dest == "serial":
            flag = "--no-serial"
        layers.append(Layer(f"command line {flag}", {"session": {key: value}}))
    return layers
