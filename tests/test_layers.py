"""The house's rule: imports point down the layers, never up, and rooms on one floor do
not import each other (docs/architecture.md). Read from every module's imports, those
inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "orchestrator"

# What each room may import besides itself and the vocabulary at the bottom.
BELOW: dict[str, set[str]] = {
    # The live view (`view`) is a surface's, read by the command line only.
    "cli": {"host", "view", "team", "agent", "session", "tools", "state", "loop", "models"}
    | {"store", "engine", "mcp", "serve", "tracing"},
    "host": {"engine", "team", "agent", "session", "tools", "state", "loop", "models", "store"}
    | {"mcp", "tracing"},
    # The team as an MCP server: sessions made and driven by a launcher (the CLI's).
    "serve": {"team", "session", "state", "tools", "loop"},
    # Where delegated tasks run durably (DBOS): a runner of the team's, chosen above it.
    "engine": {"team", "agent", "session", "tools", "state", "loop", "models", "store"},
    "team": {"agent", "session", "tools", "state", "loop", "models", "store"},
    "agent": {"tools", "state", "loop", "models", "store"},
    "view": {"session", "state", "loop", "store"},
    "session": {"state", "loop", "store"},
    "tools": {"state", "loop", "models"},
    # MCP servers as tool sources: beside `tools`, whose tools they make.
    "mcp": {"tools", "state", "loop", "models"},
    # OpenTelemetry traces: an event sink the surfaces attach (nothing below imports it).
    "tracing": {"session", "state", "loop", "store"},
    "state": {"loop", "store"},
    "loop": set(),
    "models": set(),
    "store": set(),
}
BOTTOM = {
    "messages",
    "errors",
    "eventbase",
    "config",
    "prices",
    "layout",
    "redaction",
    "text",
    "stamps",
    "_version",
    "_face",
    "_homes",
}


def room(module: str) -> str:
    """`orchestrator.team.postbox` -> `team`; a bottom module -> `bottom`."""
    part = module.split(".")[1] if module.count(".") else ""
    return "bottom" if part in BOTTOM or part in ("demo", "") else part


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "orchestrator":
                found.update(f"orchestrator.{alias.name}" for alias in node.names)
            elif node.module.startswith("orchestrator."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("orchestrator."))
    return found


def test_imports_point_down_the_layers() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        here = room(module)
        for target in imports(path):
            there = room(target)
            if there in (here, "bottom") or module in ("orchestrator", "orchestrator.__main__"):
                continue  # the package's face re-exports from every room; __main__ is the top
            if here == "bottom" or there not in BELOW[here]:
                wrong.append(f"{module} imports {target} ({here} -> {there})")
    assert not wrong, "\n".join(wrong)


def test_the_rule_can_fail() -> None:
    assert room("orchestrator.loop.todos") == "loop"
    assert "state" not in BELOW["loop"]
    assert "team" not in BELOW["session"]
