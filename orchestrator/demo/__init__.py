"""The offline demo's script, shipped with the package."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["script_path"]


def script_path() -> Path:
    """Path of the packaged demo script (a real file: the package is installed unzipped)."""
    return Path(str(resources.files(__package__).joinpath("script.json")))
