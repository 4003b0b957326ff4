"""What guards a run's shell and its record, made from the config and the flags once per
run: the environment the shell's commands inherit, the sandbox they run in, and the
secret values kept out of every record and printed line (docs/security.md)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass

from orchestrator.config import Config
from orchestrator.errors import ConfigError
from orchestrator.models.resolve import key_variables
from orchestrator.tools import EnvPolicy, Redactor, Sandbox


@dataclass(frozen=True)
class Guards:
    env: EnvPolicy
    sandbox: Sandbox
    redact: Redactor


def guards(
    config: Config, args: argparse.Namespace, *, say: Callable[[str], None] | None = None
) -> Guards:
    """The run's guards. The providers' key variables are never inherited and, with
    every secret-looking variable, redacted. Where this machine has no sandbox: a
    refusal to start if `[shell] sandbox_required`, else (to `say`) one line saying that
    commands run unsandboxed, and why; where it has one, one line saying how socket files
    are kept from commands (Landlock, or the sandbox's mounts)."""
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
    sandbox = Sandbox(
        level=getattr(args, "sandbox", None) or shell.sandbox,
        network=shell.network,
        required=shell.sandbox_required,
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
