"""The store's public face: `__all__` is what it exports, and it depends only on errors."""

from __future__ import annotations

import ast
from pathlib import Path

import orchestrator.store as store

STORE = Path(store.__file__).parent


def test_all_lists_exactly_the_public_names() -> None:
    # Names load on first use: every name in __all__ resolves, and nothing else is public.
    assert sorted(store.__all__) == store.__all__
    for name in store.__all__:
        assert getattr(store, name) is not None
    public = {name for name in vars(store) if not name.startswith("_")}
    modules = {p.stem for p in STORE.glob("*.py")}
    plumbing = {"annotations", "importlib", "TYPE_CHECKING", "Any"}
    assert public - modules - plumbing == set(store.__all__)


def test_the_store_imports_nothing_of_the_package_but_errors() -> None:
    for module in STORE.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("orchestrator")
            ):
                assert node.module == "orchestrator.errors" or node.module.startswith(
                    "orchestrator.store"
                ), f"{module.name} imports {node.module}"
            if isinstance(node, ast.Import):
                assert not any(alias.name.startswith("orchestrator") for alias in node.names)
