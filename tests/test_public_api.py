"""The package's public face: `__all__` is complete, sorted and importable."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import orchestrator
from orchestrator._homes import HOMES

# What a library user needs to run a team from Python (docs/library.md): dropping one of
# these breaks their code.
LIBRARY = {
    "ApprovalRequest",
    "Denied",
    "Later",
    "Price",
    "Question",
    "resume",
    "run",
    "AgentDefinition",
    "Definitions",
    "EventSink",
    "FunctionTool",
    "InProcessRunner",
    "Limits",
    "Mail",
    "MainOutcome",
    "PermissionPolicy",
    "RunSettings",
    "Runner",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedReply",
    "SessionInfo",
    "SessionReport",
    "TaskRecord",
    "Team",
    "Tool",
    "ToolContext",
    "ToolOutput",
    "ToolRegistry",
    "approve_all",
    "create_session",
    "drive",
    "list_sessions",
    "load_definitions",
    "load_state",
    "open_session",
    "open_team",
    "run_main",
    "session_report",
    "tool",
    "workspace_tools",
}


def test_all_names_resolve_and_are_sorted() -> None:
    assert orchestrator.__all__ == sorted(orchestrator.__all__)
    for name in orchestrator.__all__:
        assert getattr(orchestrator, name) is not None


def test_all_is_exactly_what_is_re_exported() -> None:
    assert orchestrator.__all__ == sorted(HOMES)
    assert set(orchestrator.__all__) >= LIBRARY
    for name, home in HOMES.items():
        module, _, attribute = home.partition(":")  # named otherwise at home
        assert getattr(orchestrator, name) is getattr(
            importlib.import_module(module), attribute or name
        )


def test_importing_the_package_imports_nothing_else() -> None:
    # In a fresh interpreter: the command line's start-up pays only for what it uses.
    code = (
        "import sys, orchestrator; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('orchestrator', 'trio', 'pydantic', 'httpx', 'orjson')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "['orchestrator', 'orchestrator._version']"


def test_package_faces_import_nothing_until_a_name_is_used() -> None:
    # `sessions show` and `--help` import a module of a package, which runs its face.
    code = (
        "import sys, orchestrator.state, orchestrator.session, orchestrator.team, "
        "orchestrator.loop; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('orchestrator', 'trio', 'pydantic', 'httpx', 'msgspec')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    faces = ["_face", "_version", "loop", "session", "state", "team"]
    assert out.stdout.strip() == str(["orchestrator", *(f"orchestrator.{m}" for m in faces)])


def test_every_package_init_exports_what_it_imports() -> None:
    for info in pkgutil.walk_packages(orchestrator.__path__, "orchestrator."):
        if not info.ispkg:
            continue
        package = importlib.import_module(info.name)
        exported = getattr(package, "__all__", None)
        assert exported is not None, f"{info.name} has no __all__"
        for name in exported:
            assert hasattr(package, name), f"{info.name}.__all__ names missing {name}"


def test_importing_has_no_side_effects_on_the_environment(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    importlib.reload(orchestrator)
    assert list(tmp_path.iterdir()) == []


async def test_no_test_can_reach_beyond_loopback() -> None:
    import traceback

    import httpx
    import pytest

    async with httpx.AsyncClient() as client:
        # Trio's connection racing groups the refusal; find it anywhere in what came out.
        with pytest.raises(BaseException) as info:  # noqa: PT011
            await client.get("http://192.0.2.1/")  # TEST-NET-1: never routed
    assert "only loopback is allowed" in "".join(traceback.format_exception(info.value))


def test_every_exception_of_the_package_is_in_the_error_tree() -> None:
    # Outcomes (a spent budget, a stall) are values; what is raised, a caller can catch
    # as an OrchestratorError.
    from orchestrator.errors import OrchestratorError

    outside = []
    for info in pkgutil.walk_packages(orchestrator.__path__, "orchestrator."):
        if info.name == "orchestrator.__main__":
            continue  # running it runs the command
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == info.name
                and not issubclass(value, OrchestratorError)
            ):
                outside.append(f"{info.name}.{value.__name__}")
    assert not outside


def test_drive_is_the_function_whatever_was_imported_first() -> None:
    # Importing the module `orchestrator.team.drive` (as `RunSettings` does) makes the
    # package's attribute `drive` that module: the face must still give the function.
    code = (
        "import orchestrator as orc; orc.RunSettings; import orchestrator.team.plan_calls; "
        "print(callable(orc.drive), orc.drive.__module__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["True", "orchestrator.team.drive"]


def test_every_public_name_is_in_the_library_docs() -> None:
    """docs/library.md names every name of the face (each is taught there, in a table or
    a section): a name added without its documentation fails here."""
    text = (Path(orchestrator.__file__).parents[1] / "docs" / "library.md").read_text()
    missing = [n for n in orchestrator.__all__ if not re.search(rf"\b{re.escape(n)}\b", text)]
    assert missing == []
