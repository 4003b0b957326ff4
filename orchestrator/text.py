"""Text for people: shortening what does not fit on a line."""

from __future__ import annotations


def abbreviate(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
