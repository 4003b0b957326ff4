"""The workspace root every file tool is confined to."""

from __future__ import annotations

from pathlib import Path

from orchestrator.errors import WorkspaceEscape


class Workspace:
    """A directory tree tools may touch. `resolve` is the one gate every path goes through:
    `..`, absolute paths outside the root and symlinks that lead out are refused."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def resolve(self, path: str) -> Path:
        if "\x00" in path:
            raise WorkspaceEscape(f"path {path!r} contains a NUL byte")
        candidate = Path(path)
        joined = candidate if candidate.is_absolute() else self.root / candidate
        # resolve() follows every symlink that exists, so a link inside the workspace that
        # points outside it is caught here, as is any `..` that climbs above the root.
        resolved = joined.resolve()
        if resolved != self.root and not resolved.is_relative_to(self.root):
            raise WorkspaceEscape(
                f"path {path!r} is outside the workspace {self.root} (resolves to {resolved})"
            )
        return resolved

    def relative(self, path: Path) -> str:
        """How a resolved path inside the workspace is shown to the model."""
        rel = path.relative_to(self.root)
        return rel.as_posix() if rel.parts else "."
