"""A function tool's descriptions from its docstring: the text before the first
Google-style section is the tool's, and each entry of its `Args:` section is its
parameter's (tools/functions.py)."""

from __future__ import annotations

import inspect
import re

# Google-style section headers: the description is the docstring's text before the first.
_SECTIONS = frozenset(
    {"args", "arguments", "parameters", "params", "returns", "return", "yields", "raises"}
)
_SECTION = re.compile(r"(\w+):\s*")
_ARGS = frozenset({"args", "arguments", "parameters", "params"})
# One entry of an `Args:` section: `name: text` or `name (type): text`.
_ENTRY = re.compile(r"\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """A (cleaned) docstring's description, its text before the first Google-style
    section, and its `Args:` section's description of each parameter."""
    lines = doc.splitlines()
    summary: list[str] = []
    documented: dict[str, str] = {}
    index = 0
    while index < len(lines) and not _is_section(lines[index]):
        summary.append(lines[index])
        index += 1
    while index < len(lines):
        header = lines[index]
        indent = _indent(header)
        body_end = index + 1
        while body_end < len(lines) and (
            not lines[body_end].strip() or _indent(lines[body_end]) > indent
        ):
            body_end += 1
        if header.strip()[:-1].lower() in _ARGS:
            documented.update(_entries(lines[index + 1 : body_end]))
        index = body_end
    return inspect.cleandoc("\n".join(summary)), documented


def _is_section(line: str) -> bool:
    match = _SECTION.fullmatch(line.strip())
    return match is not None and match.group(1).lower() in _SECTIONS


def _entries(body: list[str]) -> dict[str, str]:
    """`name: text` entries; a line indented deeper than an entry continues it."""
    found: dict[str, list[str]] = {}
    entry_indent: int | None = None
    current: list[str] | None = None
    for line in body:
        if not line.strip():
            continue
        indent = _indent(line)
        if entry_indent is None:
            entry_indent = indent
        match = _ENTRY.fullmatch(line.strip()) if indent <= entry_indent else None
        if match is not None:
            current = found.setdefault(match.group(1), [])
            if match.group(2):
                current.append(match.group(2).strip())
        elif current is not None:
            current.append(line.strip())
    return {name: " ".join(words) for name, words in found.items() if words}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
