"""Lazy package faces: a package's `__init__` names what it re-exports and where each
name lives, and the module that owns a name is imported on its first use, so importing a
package (for `--help`, `sessions show`) does not pull in trio, httpx or pydantic."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy(
    package: str, homes: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose names live in the modules `homes`
    gives (a module path relative to the package, like `"fold"`)."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(homes))

    return __getattr__, __dir__
