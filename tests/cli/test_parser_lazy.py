"""The command line parsed by a grammar built for its command alone (cli/main.py's
`_parse`, `Commands` in cli/options.py) answers every command line as the whole grammar
does: the same values, the same help, the same errors and exit codes."""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Callable

import pytest

from orchestrator.cli.main import _parse
from orchestrator.cli.parser import COMMANDS, build_parser


def _whole(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def _answer(
    parse: Callable[[list[str]], argparse.Namespace], argv: list[str]
) -> tuple[object, str, str]:
    """What parsing `argv` gives: its values or its exit code, with what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            given: object = vars(parse(argv))
        except SystemExit as exc:
            given = ("exit", exc.code)
    return given, out.getvalue(), err.getvalue()


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    [chosen] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(chosen.choices)


def _commands() -> list[str]:
    return list(_choices(build_parser()))


def _sessions_actions() -> list[str]:
    return list(_choices(_choices(build_parser())["sessions"]))


COMMAND_LINES = [
    [],
    ["--help"],
    ["-h"],
    ["--version"],
    ["nonsense"],
    ["--bogus", "run", "goal"],
    ["--sessions-dir"],
    ["--sessions-dir", "/tmp/s", "run", "a goal", "-m", "scripted:x.json"],
    ["run", "a goal", "--sessions-dir", "/tmp/s", "--plan", "--approve"],
    ["run", "a goal", "--bogus"],
    ["resume", "--last", "--yes", "--message", "go on"],
    ["sessions", "list", "--json"],
    ["--sess", "/tmp/s", "sessions", "show", "20260101T000000-abcdef"],
    ["sessions", "nonsense"],
    ["sessions"],
    ["sessions", "--help"],
    ["sessions", "-h", "show"],
    ["sessions", "--sessions-dir", "/tmp/s", "show", "x"],
    ["sessions", "show", "x", "--events", "3", "--json", "--sessions-dir", "/tmp/s"],
    ["sessions", "show", "x", "--bogus"],
    ["sessions", "show", "--last", "--transcript", "--full"],
    ["sessions", "fork", "x", "--at", "12"],
    ["demo", "--no-crash", "--json"],
    ["chat", "--last"],
    ["config", "show"],
    ["models"],
    ["plan", "a goal", "-m", "x"],
    ["execute", "plan.json", "--approve"],
]


@pytest.mark.parametrize(
    "argv",
    COMMAND_LINES
    + [[command, "--help"] for command in _commands()]
    + [[command] for command in _commands()]
    + [["sessions", action, "--help"] for action in _sessions_actions()]
    + [["sessions", action] for action in _sessions_actions()],
    ids=repr,
)
def test_a_command_line_is_parsed_as_the_whole_grammar_parses_it(argv: list[str]) -> None:
    assert _answer(_parse, argv) == _answer(_whole, argv)


def test_the_commands_named_first_are_the_grammars() -> None:
    # A command line that starts with one of them skips the grammar of every command.
    assert tuple(_commands()) == COMMANDS


def test_only_the_chosen_command_is_built() -> None:
    # What makes it worth having: the other commands' options are never made.
    def options(parser: argparse.ArgumentParser) -> int:
        [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return sum(
            len(p._actions)
            for p in commands.choices.values()
            if isinstance(p, argparse.ArgumentParser)
        )

    assert options(build_parser(only="")) == 0
    assert 0 < options(build_parser(only="demo")) < options(build_parser()) / 5


def test_only_the_chosen_sessions_action_is_built() -> None:
    def options(parser: argparse.ArgumentParser) -> int:
        actions = _choices(_choices(parser)["sessions"])
        return sum(
            len(p._actions) for p in actions.values() if isinstance(p, argparse.ArgumentParser)
        )

    assert options(build_parser(only="sessions", action="")) == 0
    whole = options(build_parser(only="sessions"))
    assert 0 < options(build_parser(only="sessions", action="show")) < whole / 4
