"""Text for people: what a model or a tool wrote, made safe to put on a terminal.

Three shapes, one for each place such text is shown:

- `label`: a name, title, description, path or argument shown inside one of our own
  lines (a prompt's frame, a header, a transcript line's prefix): always one line, every
  control character escaped visibly (`\\n`, `\\x1b`), cut to a width with an ellipsis. So
  a label can never start a line of its own, and never imitate one of ours.
- `block`: content shown whole for a person to judge (the command under approval, the
  content of a write): every line behind a gutter (`  │ `), control characters escaped
  but tabs; only our own lines start at the left edge.
- `visible`: a body shown as it is (a model's streamed text, a result): newlines and
  tabs stay, every other control character is escaped.

Beneath all three, `escaped`: a file name that is not UTF-8 (a byte Python carries as a
lone surrogate, which no journal, JSON or terminal can encode) with each such byte
written `\\xNN`, the one form such names take in results, records and on screen.
"""

from __future__ import annotations

import re

LABEL_WIDTH = 80
"""How long a label may be, escapes included, before it is cut."""

GUTTER = "  │ "


# Patterns, compiled by `re` (and kept in its cache) when first used: a lone surrogate's
# class alone takes 0.2 ms to compile, and most commands never meet a name not UTF-8.
_SURROGATE = "[\ud800-\udfff]"
_BYTE_ESCAPE = r"\\x([89a-f][0-9a-f])"


def escaped(text: str) -> str:
    """`text` with each byte that is not UTF-8 written `\\xNN` (`bad\\xff.txt`); as it is
    when it has none. Python gives such a byte of a file name (`os.fsdecode`,
    `os.scandir`) as a lone surrogate, U+DC80 to U+DCFF (PEP 383); any other lone
    surrogate is written `\\udNNN`."""
    if text.isascii() or not re.search(_SURROGATE, text):
        return text
    return re.sub(_SURROGATE, _escape_surrogate, text)


def unescaped(text: str) -> str:
    """What `escaped` wrote `\\xNN` (a byte 0x80 to 0xff) as the byte it stands for, so
    that a name shown escaped can be given back to a file tool."""
    return re.sub(_BYTE_ESCAPE, lambda found: chr(0xDC00 + int(found[1], 16)), text)


def _escape_surrogate(found: re.Match[str]) -> str:
    code = ord(found[0])
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def abbreviate(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


# C0 controls but tab and newline, DEL, C1 controls, the Unicode line and paragraph
# separators, and the bidirectional overrides that can make text read differently from
# what it is.
_HIDDEN = [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)]
_HIDDEN += [0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_VISIBLE = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _HIDDEN}
_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
_ONE_LINE = {**_VISIBLE, **_NAMED}
_IN_BLOCK = {**_VISIBLE, 0x0D: "\\r"}


def visible(text: str) -> str:
    """`text` safe to write to a terminal: control characters (escape sequences that
    could set the window title, clear the screen or hide a line) and direction overrides
    are shown as `\\x1b`-style escapes instead of acting. Tabs and newlines stay."""
    return text.translate(_VISIBLE)


def label(text: object, width: int = LABEL_WIDTH) -> str:
    """`text` as one line inside a frame of ours: newlines, carriage returns and tabs
    shown as `\\n`, `\\r`, `\\t`, every other control character as `\\x1b`-style
    escapes, and cut to `width` characters with an ellipsis."""
    flat = str(text).translate(_ONE_LINE)
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def block(text: str) -> list[str]:
    """`text` as lines set apart behind the gutter: split at newlines only (a carriage
    return or a Unicode separator is shown as an escape, never as a line break a person
    cannot see), control characters escaped, tabs kept."""
    return [GUTTER + line.translate(_IN_BLOCK) for line in text.split("\n")]
