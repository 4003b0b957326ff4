"""What a user types is what works and what type-checks (issue 39, item 7): tool objects
in `AgentDefinition(tools=...)` as the constructor's declared signature says, a `str`
sessions root for `create_session`, a spec string refused by `RunSettings` at once, and
`load_state` without `warn=`. (`events.result` typed whole: tests/host/test_stream.py.)"""

from __future__ import annotations

import ast
import inspect
import warnings
from pathlib import Path

import pytest

import orchestrator as orc
from orchestrator.team.definitions import AgentDefinition
from orchestrator.team.settings import RunSettings


def _declared_init() -> ast.FunctionDef:
    """The `__init__` that `AgentDefinition` declares for type checkers only."""
    tree = ast.parse(inspect.getsource(AgentDefinition))
    [init] = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == "__init__"
    ]
    return init


def test_the_declared_constructor_names_every_field_with_its_default() -> None:
    init = _declared_init()
    names = [a.arg for a in init.args.kwonlyargs]
    assert sorted(names) == sorted(AgentDefinition.model_fields)
    for arg, default in zip(init.args.kwonlyargs, init.args.kw_defaults, strict=True):
        field = AgentDefinition.model_fields[arg.arg]
        if default is None:
            assert field.is_required(), arg.arg
        else:
            assert field.get_default() == ast.literal_eval(default), arg.arg


def test_tool_objects_are_taken_as_the_constructor_declares() -> None:
    @orc.tool
    def lookup(word: str) -> str:
        """Look a word up."""
        return word

    definition = AgentDefinition(name="finder", prompt="Find.", tools=["read_file", lookup])
    assert definition.tools == ("read_file", "lookup")
    assert definition.given_tools == (lookup,)


def test_create_session_takes_a_str_root(tmp_path: Path) -> None:
    session_id, directory = orc.create_session(
        str(tmp_path / "s"), goal="g", model="openai:gpt-4.1", workspace=tmp_path
    )
    assert directory == tmp_path / "s" / session_id
    assert directory.is_dir()


def test_run_settings_refuse_a_spec_string_at_once() -> None:
    with pytest.raises(TypeError, match=r"takes a Model object, not the spec 'openai:gpt-4\.1'"):
        RunSettings(model="openai:gpt-4.1")  # type: ignore[arg-type]


async def test_load_state_needs_no_warn(tmp_path: Path) -> None:
    model = orc.ScriptedModel(lambda _: orc.ScriptedReply(text="Hello."))
    result = await orc.run("hi", model=model, workspace=tmp_path, sessions_dir=tmp_path / "s")
    assert result.session_dir is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a whole session repairs nothing
        state = orc.load_state(str(result.session_dir))
    assert state.status == "completed"
    with (result.session_dir / "journal.jsonl").open("ab") as journal:
        journal.write(b'{"torn')
    with pytest.warns(RuntimeWarning):
        orc.load_state(result.session_dir)
