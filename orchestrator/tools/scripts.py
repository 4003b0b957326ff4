"""The files in the workspace a command line runs (a script given to an interpreter, a
program of the repository): code that runs as the user's, outside the shell tool's
sandbox, which the agents' tools could change. Their digests are part of what a person
trusts of a project (cli/settings.py), and pinned when a session starts one (a hook,
team/hooks.py; an MCP server, mcp/connection.py), so an edit is not run unasked."""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path


def scripts(command: str, root: Path) -> dict[str, str]:
    """The files inside `root` that `command` names (a word of it that is a path, as given
    or relative to `root`), each with the SHA-256 of its content, by its path relative to
    `root`: what a command runs from the workspace, which the agents' tools could change."""
    try:
        words = shlex.split(command)
    except ValueError:
        return {}
    top = root.resolve()
    found = {}
    for word in words:
        path = Path(word).expanduser()
        try:
            path = (path if path.is_absolute() else top / path).resolve()
            if path.is_relative_to(top) and path.is_file():
                found[str(path.relative_to(top))] = hashlib.sha256(path.read_bytes()).hexdigest()
        except (OSError, ValueError):
            continue
    return found
