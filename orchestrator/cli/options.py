"""Option values and options that several commands' grammars share."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast


def positive(text: str) -> int:
    value = count(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def amount(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0: {text}")
    return value


FPS_RANGE = (1.0, 60.0)
"""The live view's frames a second, least and most (`--fps`, `[view] fps`)."""


def frame_rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    low, high = FPS_RANGE
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g} frames a second")
    return value


def command(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be blank")
    return text


def count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return value


def sessions_option(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: given before the command or after it, neither hides the other.
    parser.add_argument(
        "--sessions-dir",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="DIR",
        help="where sessions live (default: $ORCHESTRATOR_SESSIONS_DIR, else the user data dir)",
    )


def config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="config file (default: $ORCHESTRATOR_CONFIG, else config.toml in the user "
        "config dir; see docs/configuration.md)",
    )


if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    _SubParsers = argparse._SubParsersAction


class Commands(_SubParsers):
    """The subcommands, of which only `only` gets its own options (None: every one). The
    others get their name and help, which the top-level help and an invalid choice show,
    and a parser that ignores what it is given: their options, a few hundred, are what
    made `--help` and every command slower to start as commands were added. Chosen
    anyway, such a command is noted as the choice and its arguments are left unparsed;
    cli/main.py then builds that command's own grammar."""

    _only: str | None = None

    @classmethod
    def add_to(cls, parser: argparse.ArgumentParser, only: str | None, **kwargs: Any) -> Commands:
        commands = parser.add_subparsers(action=cls, **kwargs)
        if isinstance(commands, _Unbuilt):  # (the actions of a command not built)
            return cast(Commands, commands)
        assert isinstance(commands, Commands)
        commands._only = only
        return commands

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if self._only is None or name == self._only:
            return super().add_parser(name, **kwargs)
        built, self._parser_class = self._parser_class, cast(Any, _Unbuilt)
        try:
            return super().add_parser(name, **kwargs)
        finally:
            self._parser_class = built

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        name, *rest = values
        if not isinstance(self._name_parser_map.get(name), _Unbuilt):
            super().__call__(parser, namespace, values, option_string)
            return
        setattr(namespace, self.dest, name)
        unparsed = vars(namespace).setdefault(argparse._UNRECOGNIZED_ARGS_ATTR, [])
        unparsed.extend(rest)


class _Unbuilt:
    """The parser of a command not built: every call on it does nothing."""

    def __init__(self, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Callable[..., _Unbuilt]:
        return self._ignore

    def _ignore(self, *args: Any, **kwargs: Any) -> _Unbuilt:
        return self
