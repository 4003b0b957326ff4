"""Text for people: shortening what does not fit on a line."""

from __future__ import annotations


def abbreviate(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides that
# can make text read differently from what it is.
_HIDDEN = [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)]
_HIDDEN += [0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_VISIBLE = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _HIDDEN}


def visible(text: str) -> str:
    """`text` safe to write to a terminal: control characters (escape sequences that
    could set the window title, clear the screen or hide a line) and direction overrides
    are shown as `\\x1b`-style escapes instead of acting. Tabs and newlines stay."""
    return text.translate(_VISIBLE)
