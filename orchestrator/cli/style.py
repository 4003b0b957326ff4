"""What every printed line is made of: ANSI styling (or none, for pipes and
`NO_COLOR`), the widths its parts are cut to, and a call's arguments abbreviated."""

from __future__ import annotations

import os

import orjson

from orchestrator.text import abbreviate, label

ARG_WIDTH = 60
RESULT_WIDTH = 100
REASON_WIDTH = 400  # an assessment's reasons, a block's: one line, cut only when very long


def format_arguments(raw: str) -> str:
    """`path='a.py' content='def f…'`: each argument abbreviated, or the raw text if it
    is not a JSON object."""
    try:
        parsed = orjson.loads(raw or "{}")
    except orjson.JSONDecodeError:
        return abbreviate(raw, ARG_WIDTH)
    if not isinstance(parsed, dict):
        return abbreviate(raw, ARG_WIDTH)
    return " ".join(
        f"{label(key, ARG_WIDTH // 2)}={abbreviate(repr(value), ARG_WIDTH // 2)}"
        for key, value in parsed.items()
    )


def color_enabled(stream: object) -> bool:
    """Colour for a terminal, unless `NO_COLOR` is set (https://no-color.org); never for
    a pipe or a file."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Style:
    """ANSI styling, or none at all (pipes, NO_COLOR)."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)
