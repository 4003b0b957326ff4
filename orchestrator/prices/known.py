"""The prices of known models when the config names none: `_table.py`, generated
from the `genai-prices` package (see there for the version, date and sources).

A spec ("openai:gpt-4.1", "anthropic:claude-sonnet-4-5-20250929",
"openrouter:openai/gpt-4o") is matched on its model part, lower-cased, without a vendor
prefix ("openai/") or an `@URL`, with OpenRouter's dotted Claude names written with
dashes ("claude-3.5-sonnet" -> "claude-3-5-sonnet"). The longest row that starts it
wins, and only if what follows is a version tail: a date ("-20250514", "-2024-08-06"),
"-latest" or a three-digit revision ("-001"). So a dated Anthropic id is priced as its
family's row, and "claude-opus-4-9" is not taken for "claude-opus-4", nor "o1-mini" for
"o1". Plain data and arithmetic: nothing here imports pydantic.
"""

from __future__ import annotations

import functools
import re

from orchestrator.messages import Usage
from orchestrator.prices._table import ROWS

PER = 1_000_000
_TAIL = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-\d{3}|-latest)?")


def known_row(spec: str) -> str | None:
    """The table's row for model `spec`, or None if the table does not know it."""
    name = _model_id(spec)
    matches = [key for key in ROWS if name.startswith(key) and _TAIL.fullmatch(name[len(key) :])]
    return max(matches, key=len, default=None)


@functools.cache  # a session prices every call of its few models
def known_figures(spec: str) -> tuple[float, float, float, float] | None:
    """Dollars per million tokens of `spec`: (input, output, cache read, cache write)."""
    row = known_row(spec)
    if row is None:
        return None
    _, *figures = ROWS[row]
    return figures[0], figures[1], figures[2], figures[3]


def known_cost(spec: str, usage: Usage) -> float | None:
    """What `usage` of model `spec` cost by the table, None if the table has no price."""
    figures = known_figures(spec)
    if figures is None:
        return None
    given, output, cache_read, cache_write = figures
    return (
        usage.input_tokens * given
        + usage.output_tokens * output
        + usage.cache_read_tokens * cache_read
        + usage.cache_write_tokens * cache_write
    ) / PER


def _model_id(spec: str) -> str:
    _, sep, model = spec.partition(":")
    name = (model if sep else spec).lower().split("@", 1)[0].rsplit("/", 1)[-1]
    return name.replace(".", "-") if name.startswith("claude") else name
