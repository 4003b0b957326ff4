"""Option values and options that several commands' grammars share."""

from __future__ import annotations

import argparse
from pathlib import Path


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
