"""The four calls' keywords, each defined once (host/options.py): their signatures agree,
`help` lists and documents every keyword with its default and type, and a caller's
keywords are checked as they were when each call spelled them out."""

from __future__ import annotations

import inspect
import pydoc
import re
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

import orchestrator as orc

Keywords = dict[str, tuple[Any, Any, Any]]


def keywords(call: Callable[..., object]) -> Keywords:
    """Each parameter's kind, default and annotation, by name."""
    parameters = inspect.signature(call).parameters.values()
    return {p.name: (p.kind, p.default, p.annotation) for p in parameters}


def differ(one: Keywords, other: Keywords) -> tuple[set[str], set[str], set[str]]:
    """The names only `one` has, only `other` has, and those both have but unlike."""
    both = one.keys() & other.keys()
    unlike = {name for name in both if one[name] != other[name]}
    return one.keys() - other.keys(), other.keys() - one.keys(), unlike


def test_stream_takes_runs_keywords_but_on_event_and_with_buffer() -> None:
    assert differ(keywords(orc.run), keywords(orc.stream)) == ({"on_event"}, {"buffer"}, set())
    pulled = keywords(orc.stream_resume)
    assert differ(keywords(orc.resume), pulled) == ({"on_event"}, {"buffer"}, set())
    assert keywords(orc.stream)["buffer"] == pulled["buffer"]


def test_resume_differs_from_run_only_where_it_must() -> None:
    run, resume = keywords(orc.run), keywords(orc.resume)
    only_run = {"goal", "workspace", "in_memory"}  # (a session kept in memory has no resume)
    assert differ(run, resume) == (only_run, {"session", "message", "approvals"}, {"model"})
    assert run["model"] == (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.empty, "Model | str")
    assert resume["model"] == (inspect.Parameter.KEYWORD_ONLY, None, "Model | str | None")


@pytest.mark.parametrize("call", [orc.run, orc.resume, orc.stream, orc.stream_resume])
def test_one_positional_argument_then_keywords(call: Callable[..., object]) -> None:
    kinds = [kind for kind, _, _ in keywords(call).values()]
    assert kinds[0] == inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert set(kinds[1:]) == {inspect.Parameter.KEYWORD_ONLY}


@pytest.mark.parametrize("call", [orc.run, orc.resume, orc.stream, orc.stream_resume])
def test_help_lists_and_documents_every_keyword(call: Callable[..., object]) -> None:
    text = pydoc.plain(pydoc.render_doc(call))
    for name in keywords(call):
        assert f"`{name}`:" in text, name
    assert "instructions: 'str' = ''" in text
    assert "agents: 'Iterable[AgentDefinition]' = ()" in text
    hints = typing.get_type_hints(call)  # the annotations evaluate
    assert hints.keys() == {*keywords(call), "return"}


def test_run_and_resume_are_coroutine_functions_and_help_says_so() -> None:
    for call in (orc.run, orc.resume):
        assert inspect.iscoroutinefunction(call)
        assert pydoc.plain(pydoc.render_doc(call)).splitlines()[2].startswith("async ")
    assert pydoc.render_doc(orc.run).startswith("Python Library Documentation: function run in")


async def test_a_wrong_argument_is_refused_as_by_a_plain_def(tmp_path: Path) -> None:
    model = "scripted:script.json"
    unknown: dict[str, Any] = {"instruction": "be brief"}
    refused = "got an unexpected keyword argument 'instruction'"
    with pytest.raises(TypeError, match=re.escape(f"run() {refused}")):
        await orc.run("goal", model=model, sessions_dir=tmp_path, **unknown)
    with pytest.raises(TypeError, match=re.escape(f"resume() {refused}")):
        await orc.resume(tmp_path, **unknown)
    with pytest.raises(TypeError, match=re.escape(f"stream_resume() {refused}")):
        orc.stream_resume(tmp_path, **unknown)
    with pytest.raises(TypeError, match=re.escape("stream() missing a required argument: 'model'")):
        orc.stream("goal")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=re.escape("stream() got an unexpected keyword argument")):
        orc.stream("goal", model=model, on_event=print)  # type: ignore[call-arg]
    assert not list(await trio.Path(tmp_path).iterdir())  # refused before a session is made
