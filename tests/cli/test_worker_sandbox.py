"""The worker's `--sandbox` (issue 38): the choices `run` takes, with the same meaning and
the same default, so one word means one sandbox wherever a task runs."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from orchestrator.cli.guards import guards
from orchestrator.cli.parser import build_parser
from orchestrator.config import Config, ShellConfig
from orchestrator.tools.sandbox import LEVELS


def _choices(command: str) -> tuple[str, ...]:
    [commands] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    [sandbox] = [a for a in commands.choices[command]._actions if "--sandbox" in a.option_strings]
    assert sandbox.choices is not None
    return tuple(sandbox.choices)


def test_the_worker_takes_the_sandbox_levels_run_takes() -> None:
    assert _choices("worker") == _choices("run") == LEVELS


@pytest.mark.parametrize(
    ("flags", "config", "level"),
    [
        ([], "workspace", "workspace"),
        ([], "strict", "strict"),
        (["--sandbox", "off"], "workspace", "off"),
        (["--sandbox", "strict"], "off", "strict"),
        (["--sandbox", "workspace"], "strict", "workspace"),
    ],
)
def test_the_worker_and_run_give_the_same_sandbox(
    flags: list[str], config: str, level: str
) -> None:
    shell = Config(shell=ShellConfig.model_validate({"sandbox": config}))
    for command in (["worker"], ["run", "goal"]):
        args = build_parser().parse_args([*command, *flags])
        assert guards(shell, args).sandbox.level == level, command


def test_the_worker_refuses_a_level_run_does_not_know() -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["worker", "--sandbox", "auto"])
    assert exited.value.code == 2
    assert "invalid choice: 'auto'" in err.getvalue()
