"""What guards a run's shell and its record, made from the config and the flags once per
run: the environment the shell's commands inherit, the sandbox they run in, and the
secret values kept out of every record and printed line (docs/security.md).

The sandbox's level and whether it lets commands reach the network are journaled with
the session's settings (`shell_settings`): a resume runs with the journaled ones, which
the config as it is then does not loosen; only a flag given on that resume does
(`--sandbox`, `--network`), said in one line. Tightening needs nothing."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import msgspec

from orchestrator.config import Config
from orchestrator.errors import ConfigError
from orchestrator.models.resolve import key_variables
from orchestrator.state.settings import SessionSettings
from orchestrator.tools import EnvPolicy, Redactor, Sandbox
from orchestrator.tools.sandbox import LEVELS


class Guards(msgspec.Struct, frozen=True):
    env: EnvPolicy
    sandbox: Sandbox
    redact: Redactor


def new_shell_settings(config: Config, args: argparse.Namespace) -> dict[str, Any]:
    """A new session's sandbox and network (`SessionSettings.sandbox`, `network`): the
    flags, else `[shell] sandbox` and `network`."""
    network = getattr(args, "network", None)
    return {
        "sandbox": getattr(args, "sandbox", None) or config.shell.sandbox,
        "network": config.shell.network if network is None else network,
    }


def shell_settings(
    journaled: SessionSettings,
    config: Config,
    args: argparse.Namespace,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """The sandbox and network a resume changes, as a settings change: a flag given on
    this resume (`--sandbox`, `--network`), said in one line when it loosens the journaled
    value. Without a flag the journaled value stands (`guards` reads it), and a config
    that would loosen it is said not to. (A session of format 10 or older, or a
    program's, journaled none: its runs take them from their flags and config, as they
    always did.)"""
    changes: dict[str, Any] = {}
    level: str | None = getattr(args, "sandbox", None)
    before, configured = journaled.sandbox, config.shell.sandbox
    if level is not None:
        changes["sandbox"] = level
        if before is not None and LEVELS.index(level) < LEVELS.index(before):
            say(f"note: the session's sandbox loosened from {before} to {level}, as --sandbox asks")
    elif before is not None and LEVELS.index(configured) < LEVELS.index(before):
        say(
            f"note: the session keeps its sandbox {before}, as journaled; [shell] sandbox "
            f"{configured} does not loosen it (--sandbox {configured} would)"
        )
    network: bool | None = getattr(args, "network", None)
    if network is not None:
        changes["network"] = network
        if network and journaled.network is False:
            say("note: the session's commands may reach the network from now on, as --network asks")
    elif journaled.network is False and config.shell.network:
        say(
            "note: the session keeps its commands off the network, as journaled; [shell] "
            "network = true does not let them on (--network would)"
        )
    return changes


def guards(
    config: Config,
    args: argparse.Namespace,
    *,
    say: Callable[[str], None] | None = None,
    settings: SessionSettings | None = None,
) -> Guards:
    """The run's guards; the sandbox's level and network are `settings`' (the session's)
    when it has them, else the flag's and the config's. The providers' key variables are
    never inherited and, with every secret-looking variable, redacted. Where this
    machine has no sandbox: a refusal to start if `[shell] sandbox_required`, else (to
    `say`) one line saying that commands run unsandboxed, and why; where it has one, one
    line saying how socket files are kept from commands (Landlock, or the sandbox's
    mounts)."""
    keys = key_variables(env=os.environ, config=config)
    shell = config.shell
    env = EnvPolicy(
        inherit=shell.inherit,
        keep_secrets=shell.keep_secrets,
        exclude=shell.exclude,
        include_only=shell.include_only,
        set=dict(shell.set),
        always_drop=frozenset(keys),
    )
    chosen = new_shell_settings(config, args)
    if settings is not None and settings.sandbox is not None:
        chosen["sandbox"] = settings.sandbox
    if settings is not None and settings.network is not None:
        chosen["network"] = settings.network
    sandbox = Sandbox(
        level=chosen["sandbox"],
        network=chosen["network"],
        required=shell.sandbox_required,
        writable=shell.writable,
        probe=shell.sandbox_probe,
    )
    why = sandbox.unavailable() if sandbox.level != "off" else None
    if why is not None and sandbox.required:
        raise ConfigError(
            f"shell commands cannot be sandboxed here ({why}) and [shell] sandbox_required "
            'is true: not starting (set [shell] sandbox = "off" to run without one)'
        )
    if why is not None and say is not None:
        say(f"note: shell commands run unsandboxed here: {why} (see docs/security.md)")
    elif sandbox.active and say is not None:
        say(f"note: shell commands run {sandbox.describe()}; {sandbox.protection()}")
    return Guards(env, sandbox, Redactor.for_environment(keys, os.environ))
