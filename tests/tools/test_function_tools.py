"""Tools from functions (`@tool`): the argument schema read from the signature and the
docstring, the context parameter, plain functions run in a worker thread, what each kind
of return value becomes, errors as the model sees them, what is refused at decoration,
and a function tool given to an agent type as an object, run through `drive`."""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import pydantic
import pytest
import trio
import trio.lowlevel
from pydantic import BaseModel, Field

import orchestrator as orc
from orchestrator import (
    AgentDefinition,
    Definitions,
    ListSink,
    ModelRequest,
    RunSettings,
    ScriptedCall,
    ScriptedModel,
    ScriptedReply,
    ToolResult,
    create_session,
    drive,
    load_state,
    open_session,
)
from orchestrator.agent import run_turn
from orchestrator.errors import ConfigError, ToolFailed
from orchestrator.tools import (
    FunctionTool,
    PermissionPolicy,
    ToolContext,
    ToolOutput,
    ToolRegistry,
    Workspace,
    approve_all,
    tool,
    workspace_tools,
)
from orchestrator.tools.functions import DONE, as_output
from tests.conftest import MakeDeps
from tests.scenes import call, scripted

# (Module level, and this module has `from __future__ import annotations`: the decorator
# resolves the string annotations with `typing.get_type_hints`.)


class Span(BaseModel):
    start: int
    end: int


@tool(read_only=True, idempotent=True)
async def word_count(path: str, ctx: orc.ToolContext) -> str:
    """Count the words in a workspace file.

    Args:
        path: the file, relative to the workspace.
    """
    text = await trio.Path(ctx.workspace.resolve(path)).read_text()
    return f"{len(text.split())} words"


@tool
def search(
    pattern: str,
    span: Span,
    limit: Annotated[int, Field(ge=1)] = 10,
    mode: Literal["regex", "plain"] = "plain",
    tags: list[str] | None = None,
) -> str:
    """Search the notes.

    Searches every note, case-insensitively.

    Args:
        pattern: what to look for; in
            `regex` mode, a Python regular expression.
        span (Span): the lines to look in.
        limit: at most this many hits.

    Returns:
        the hits, one a line.
    """
    return f"{pattern} {span.start}-{span.end} {limit} {mode} {tags}"


def results(messages: list[Any]) -> list[tuple[str, str, str]]:
    return [(m.name, m.status, m.content) for m in messages if isinstance(m, ToolResult)]


# --- the schema --------------------------------------------------------------------------


def test_the_schema_comes_from_the_signature_and_the_docstring() -> None:
    spec = search.spec()
    assert (spec.name, spec.description) == (
        "search",
        "Search the notes.\n\nSearches every note, case-insensitively.",
    )
    assert spec.parameters == {
        "$defs": {
            "Span": {
                "properties": {
                    "start": {"title": "Start", "type": "integer"},
                    "end": {"title": "End", "type": "integer"},
                },
                "required": ["start", "end"],
                "title": "Span",
                "type": "object",
            }
        },
        "additionalProperties": False,
        "properties": {
            "pattern": {
                "description": "what to look for; in `regex` mode, a Python regular expression.",
                "title": "Pattern",
                "type": "string",
            },
            "span": {"$ref": "#/$defs/Span", "description": "the lines to look in."},
            "limit": {
                "default": 10,
                "description": "at most this many hits.",
                "minimum": 1,
                "title": "Limit",
                "type": "integer",
            },
            "mode": {
                "default": "plain",
                "enum": ["regex", "plain"],
                "title": "Mode",
                "type": "string",
            },
            "tags": {
                "anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}],
                "default": None,
                "title": "Tags",
            },
        },
        "required": ["pattern", "span"],
        "type": "object",
    }
    # The arguments are checked by the model built from the signature, extras refused.
    args = search.args_model.model_validate({"pattern": "x", "span": {"start": 1, "end": 2}})
    assert (args.limit, args.mode, args.tags) == (10, "plain", None)  # type: ignore[attr-defined]
    with pytest.raises(pydantic.ValidationError, match="limit"):
        search.args_model.model_validate(
            {"pattern": "x", "span": {"start": 1, "end": 2}, "limit": 0}
        )
    with pytest.raises(pydantic.ValidationError, match="Extra inputs are not permitted"):
        search.args_model.model_validate(
            {"pattern": "x", "span": {"start": 1, "end": 2}, "colour": "red"}
        )


def test_the_context_parameter_is_not_in_the_schema() -> None:
    assert word_count.spec().parameters == {
        "additionalProperties": False,
        "properties": {
            "path": {
                "description": "the file, relative to the workspace.",
                "title": "Path",
                "type": "string",
            }
        },
        "required": ["path"],
        "type": "object",
    }


def test_name_description_and_flags() -> None:
    assert isinstance(word_count, FunctionTool)
    assert isinstance(word_count, orc.Tool)
    assert (word_count.name, word_count.description) == (
        "word_count",
        "Count the words in a workspace file.",
    )
    flags = (word_count.read_only, word_count.idempotent, word_count.approval)
    assert flags == (True, True, True)
    assert word_count.interruptible  # it changes nothing, so it may be stopped
    # Unflagged: what a class-based tool is unless it says otherwise.
    assert (search.read_only, search.idempotent, search.approval, search.interruptible) == (
        False,
        False,
        orc.Tool.approval,
        False,
    )

    @tool(name="tidy-up", description="  Tidy the workspace.  ", approval=False)
    def tidy() -> None:
        """Not what the model reads."""

    assert (tidy.name, tidy.description, tidy.approval) == ("tidy-up", "Tidy the workspace.", False)
    assert tidy.spec().parameters == {
        "additionalProperties": False,
        "properties": {},
        "type": "object",
    }


def test_a_parameter_pydantic_keeps_for_itself_keeps_its_name() -> None:
    @tool
    def export(json: bool, model_name: str, copy: int = 1) -> str:
        """Export.

        Args:
            json: as JSON.
        """
        return f"{json} {model_name} {copy}"

    schema = export.spec().parameters
    assert list(schema["properties"]) == ["json", "model_name", "copy"]
    assert schema["properties"]["json"]["description"] == "as JSON."
    assert schema["required"] == ["json", "model_name"]


async def test_the_decorated_function_is_still_the_function(workspace: Workspace) -> None:
    (workspace.root / "a.txt").write_text("one two three")
    ctx = ToolContext(workspace=workspace)
    assert await word_count.fn("a.txt", ctx) == "3 words"
    assert await word_count("a.txt", ctx) == "3 words"  # the tool called is the function
    assert search("x", Span(start=1, end=2), limit=3) == "x 1-2 3 plain None"
    assert word_count.__name__ == "word_count"
    assert word_count.__doc__ is not None
    assert word_count.__doc__.startswith("Count the words")
    assert word_count.__wrapped__ is word_count.fn


# --- running ----------------------------------------------------------------------------


async def test_a_call_through_the_turn_loop_gets_its_context(
    make_deps: MakeDeps, workspace: Workspace
) -> None:
    (workspace.root / "a.txt").write_text("the journal is the truth\n")
    seen: list[ToolContext] = []

    @tool
    async def whoami(context: ToolContext, /, label: str, also: ToolContext | None = None) -> str:
        """Say who calls."""
        assert also is context  # (every parameter of the type gets it)
        seen.append(context)
        return f"{label}: {context.agent} {context.call}"

    assert list(whoami.spec().parameters["properties"]) == ["label"]

    model = scripted(
        {"tool_calls": [call("word_count", path="a.txt"), call("whoami", label="me")]},
        {"text": "done"},
    )
    state, deps, _ = make_deps(model, ToolRegistry([word_count, whoami]))
    await run_turn(state, deps)
    [ref] = {c.call for c in seen}
    assert results(state.messages) == [
        ("word_count", "ok", "5 words"),
        ("whoami", "ok", f"me: main {ref}"),
    ]
    assert seen[0].workspace is workspace  # the call's context: the agent's, with its ref
    assert ref != ""


async def test_a_plain_function_runs_in_a_worker_thread(make_deps: MakeDeps) -> None:
    threads: list[int] = []

    @tool
    def blocking(n: int) -> str:
        """Block."""
        threads.append(threading.get_ident())
        # Only a thread trio started may call back into trio: it is not the trio thread,
        # and the event loop is free to run this while the function waits for it.
        task = trio.from_thread.run_sync(lambda: trio.lowlevel.current_task().name)
        return f"{n} {bool(task)}"

    model = scripted({"tool_calls": [call("blocking", n=2)]}, {"text": "done"})
    state, deps, _ = make_deps(model, ToolRegistry([blocking]))
    await run_turn(state, deps)
    assert results(state.messages) == [("blocking", "ok", "2 True")]
    assert threads != [threading.get_ident()]
    assert len(threads) == 1


async def test_an_async_function_runs_on_the_trio_thread(workspace: Workspace) -> None:
    @tool
    async def where() -> str:
        """Where."""
        return str(threading.get_ident())

    output = await where.run(where.args_model(), ToolContext(workspace=workspace))
    assert output.content == str(threading.get_ident())


@dataclasses.dataclass
class Count:
    path: str
    words: int


class Totals(msgspec.Struct):
    files: int
    words: int


class Report(BaseModel):
    span: Span
    where: Path


@pytest.mark.parametrize(
    ("value", "output"),
    [
        ("3 words", ToolOutput("3 words")),
        ("", ToolOutput("")),
        (None, ToolOutput(DONE)),
        (ToolOutput.error("no such file"), ToolOutput("no such file", "error")),
        (ToolOutput("x", ends_turn=True), ToolOutput("x", ends_turn=True)),
        ({"a.txt": 5, "b.txt": 6}, ToolOutput('{"a.txt":5,"b.txt":6}')),
        ({1: "one"}, ToolOutput('{"1":"one"}')),
        (["a", 1, None, True], ToolOutput('["a",1,null,true]')),
        (3, ToolOutput("3")),
        (2.5, ToolOutput("2.5")),
        (False, ToolOutput("false")),
        (
            Report(span=Span(start=1, end=2), where=Path("a/b")),
            ToolOutput('{"span":{"start":1,"end":2},"where":"a/b"}'),
        ),
        (Totals(files=2, words=11), ToolOutput('{"files":2,"words":11}')),
        (Count("a.txt", 5), ToolOutput('{"path":"a.txt","words":5}')),
        (  # nested, each kind inside another
            {"counts": [Count("a.txt", 5)], "totals": Totals(1, 5), "span": Span(start=0, end=1)},
            ToolOutput(
                '{"counts":[{"path":"a.txt","words":5}],"totals":{"files":1,"words":5},'
                '"span":{"start":0,"end":1}}'
            ),
        ),
        ({"tags": {"x"}}, ToolOutput('{"tags":["x"]}')),
    ],
)
async def test_what_a_return_value_becomes(
    value: object, output: ToolOutput, workspace: Workspace
) -> None:
    assert as_output(value) == output

    @tool
    async def give() -> object:
        """Give it back."""
        return value

    @tool
    def give_in_a_thread() -> object:
        """Give it back."""
        return value

    ctx = ToolContext(workspace=workspace)
    assert await give.run(give.args_model(), ctx) == output
    assert await give_in_a_thread.run(give_in_a_thread.args_model(), ctx) == output


def test_a_return_value_that_is_not_json_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="give returned a object that is not JSON"):
        as_output(object(), "give")


async def test_an_exception_is_an_error_result_like_a_class_tools(make_deps: MakeDeps) -> None:
    @tool
    async def refuses(path: str) -> str:
        """Refuse."""
        raise ToolFailed(f"{path}: not a text file")

    @tool
    def crashes(path: str) -> str:
        """Crash, in a thread."""
        raise KeyError(path)

    @tool
    async def escapes(path: str, ctx: ToolContext) -> str:
        """Reach outside."""
        return str(ctx.workspace.resolve(path))

    @tool
    def unwritable() -> object:
        """Return what is not JSON."""
        return object()

    model = scripted(
        {
            "tool_calls": [
                call("refuses", path="a.bin"),
                call("crashes", path="x"),
                call("escapes", path="../secret"),
                call("unwritable"),
                call("refuses", path=3),
                call("refuses", path="a", mode="fast"),
            ]
        },
        {"text": "done"},
    )
    tools = ToolRegistry([refuses, crashes, escapes, unwritable])
    state, deps, _ = make_deps(model, tools)
    await run_turn(state, deps)
    got = results(state.messages)
    assert got[:2] == [
        ("refuses", "error", "a.bin: not a text file"),  # ToolFailed: its message
        ("crashes", "error", "crashes crashed: KeyError: 'x'"),
    ]
    assert got[2][:2] == ("escapes", "error")
    assert "outside the workspace" in got[2][2]
    assert got[3] == (
        "unwritable",
        "error",
        "unwritable crashed: TypeError: unwritable returned a object that is not JSON: "
        "Type is not JSON serializable: object",
    )
    assert got[4][:2] == ("refuses", "error")
    assert got[4][2].startswith("invalid arguments for refuses: path: Input should be")
    assert got[5] == (
        "refuses",
        "error",
        "unknown argument 'mode' for refuses; its arguments are: path",
    )


async def test_a_cancellation_is_not_swallowed(
    workspace: Workspace, autojump_clock: trio.testing.MockClock
) -> None:
    finished = []

    @tool
    async def forever() -> str:
        """Wait forever."""
        await trio.sleep_forever()
        finished.append(True)
        return "never"

    with trio.move_on_after(5) as scope:
        await forever.run(forever.args_model(), ToolContext(workspace=workspace))
    assert scope.cancelled_caught
    assert finished == []


# --- refused at decoration ---------------------------------------------------------------


def no_docstring(path: str) -> str:
    return path


def only_args(path: str) -> str:
    """Args:
    path: a file.
    """
    return path


def star_args(*paths: str) -> str:
    """Take many."""
    return ""


def star_kwargs(path: str, **options: str) -> str:
    """Take anything."""
    return ""


def unannotated(path, limit: int = 3) -> str:  # type: ignore[no-untyped-def]
    """No type."""
    return ""


def misdocumented(path: str) -> str:
    """Read.

    Args:
        pth: the file.
    """
    return ""


def no_schema(workspace: Workspace) -> str:
    """A type pydantic cannot validate."""
    return ""


def no_json_schema(callback: Callable[[], None]) -> str:
    """A type pydantic validates and has no JSON schema for."""
    return ""


def generator(n: int) -> Any:
    """Yield."""
    yield n


def undefined_name(path: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821
    """A name that does not resolve."""
    return ""


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (no_docstring, "tool 'no_docstring' has no description: give .*no_docstring a docstring"),
        (only_args, "'only_args' has no description: its docstring has no text before"),
        (star_args, r"takes \*paths; a tool's arguments are named"),
        (star_kwargs, r"takes \*\*options"),
        (unannotated, "parameter 'path' of .*unannotated has no annotation"),
        (misdocumented, "its docstring's Args: names pth, not a parameter"),
        (generator, "is a generator"),
        (no_schema, "'no_schema': no argument model for .*no_schema"),
        (no_json_schema, "'no_json_schema': its arguments have no JSON schema"),
        (undefined_name, "cannot resolve the annotations of .*undefined_name: name 'Missing'"),
        (lambda path: path, "'<lambda>' is not a tool name"),
    ],
)
def test_what_is_refused_at_decoration(fn: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        tool(fn)


def test_a_description_or_a_name_given_makes_up_for_the_function() -> None:
    made = tool(no_docstring, description="Echo a path.")
    assert made.description == "Echo a path."
    renamed = tool(name="find")(search.fn)
    assert (renamed.name, renamed.description) == ("find", search.description)
    with pytest.raises(TypeError, match="tool 'echo' has no description: give"):
        tool(name="echo")(no_docstring)


# --- in an agent type -------------------------------------------------------------------


def test_a_definition_holds_a_tool_object_by_its_name() -> None:
    counter = AgentDefinition(name="counter", prompt="Count.", tools=(word_count, "read_file"))
    assert counter.tools == ("word_count", "read_file")
    assert counter.given_tools == (word_count,)
    assert counter.read_only  # word_count says it is
    writer = AgentDefinition(name="w", prompt="Count.", tools=(search,))
    assert not writer.read_only
    # A TOML file's check of the names it lists: one given as an object is known.
    checked = AgentDefinition.model_validate(
        {"name": "c", "prompt": "p", "tools": [word_count, "read_file"]},
        context={"known_tools": {"read_file"}},
    )
    assert checked.given_tools == (word_count,)
    with pytest.raises(pydantic.ValidationError, match="unknown tool 'grep'"):
        AgentDefinition.model_validate(
            {"name": "c", "prompt": "p", "tools": [word_count, "grep"]},
            context={"known_tools": {"read_file"}},
        )
    with pytest.raises(pydantic.ValidationError, match="listed more than once: word_count"):
        AgentDefinition(name="c", prompt="p", tools=(word_count, "word_count"))


def test_two_different_tools_of_one_name_are_refused(workspace: Workspace) -> None:
    @tool(name="word_count")
    def impostor(path: str) -> str:
        """Another count."""
        return path

    counter = AgentDefinition(name="counter", prompt="Count.", tools=(word_count,))
    other = AgentDefinition(name="other", prompt="Count.", tools=(impostor,))
    with pytest.raises(
        ConfigError,
        match="two different tools are named 'word_count': one given in agent type "
        "'counter', another in agent type 'other'",
    ):
        Definitions([counter, other])
    # The same tool in two types is one tool.
    twice = Definitions([counter, counter.model_copy(update={"name": "again"})])
    assert dict(twice.given_tools()) == {"word_count": (word_count, "counter")}

    def settings(base: ToolRegistry) -> RunSettings:
        return RunSettings(model=scripted(), tools=base, definitions=Definitions([counter]))

    with pytest.raises(
        ConfigError,
        match=re.escape(
            "two different tools are named 'word_count': one in the session's tools "
            "(RunSettings.tools), another given in agent type "
            "'counter'"
        ),
    ):
        settings(ToolRegistry([impostor])).all_tools  # noqa: B018 (made when first read)
    # The tool itself in the session's tools too: nothing to add, the registry as given.
    base = ToolRegistry([word_count])
    assert settings(base).all_tools is base
    # Added to a new registry: the caller's may be shared by other sessions.
    given = workspace_tools()
    added = settings(given).all_tools
    assert added.names() == [*given.names(), "word_count"]
    assert "word_count" not in given


def brain(request: ModelRequest) -> ScriptedReply:
    """The main agent delegates one `counter` task, waits for it and ends; the counter
    calls both function tools, then completes with what they said."""
    messages, last = request.messages, request.messages[-1]
    if request.role == "main":
        if request.step == 0:
            delegate = ScriptedCall(
                name="delegate",
                arguments={
                    "description": "count words in a.txt",
                    "prompt": "Count a.txt.",
                    "agent_type": "counter",
                    "write_scope": [],
                },
            )
            return ScriptedReply(tool_calls=(delegate,))
        if last.role == "tool" and last.name == "wait_tasks" and last.status == "ok":
            return ScriptedReply(text="counted")
        return ScriptedReply(tool_calls=(ScriptedCall(name="wait_tasks"),))
    done = [m for m in messages if m.role == "tool"]
    if not done:
        return ScriptedReply(
            tool_calls=(
                ScriptedCall(name="word_count", arguments={"path": "a.txt"}),
                ScriptedCall(name="tally", arguments={"words": ["a", "b", "a"]}),
            )
        )
    summary = "; ".join(f"{m.name} {m.status}: {m.content}" for m in done)  # type: ignore[union-attr]
    return ScriptedReply(
        tool_calls=(ScriptedCall(name="complete", arguments={"summary": summary}),)
    )


@tool(idempotent=True)
def tally(words: list[str]) -> dict[str, int]:
    """Count each word.

    Args:
        words: the words.
    """
    return {word: words.count(word) for word in sorted(set(words))}


async def test_a_function_tool_given_to_an_agent_type_runs_through_drive(tmp_path: Path) -> None:
    counter = AgentDefinition(
        name="counter",
        description="Counts words.",
        prompt="You count words.",
        tools=(word_count, tally, "read_file"),
    )
    root = tmp_path / "sessions"
    session_id, directory = create_session(root, goal="count", model="m", workspace=None)
    (directory / "workspace" / "a.txt").write_text("the journal is the truth\n")
    model = ScriptedModel(brain)
    tools = workspace_tools()
    settings = RunSettings(
        model=model,
        tools=tools,
        ui=ListSink(),
        policy=PermissionPolicy(),
        approve=approve_all,
        definitions=Definitions([*Definitions.builtin(), counter]),
    )
    with trio.fail_after(30):
        async with open_session(root, session_id, warn=pytest.fail) as live:
            result = await drive(live, settings)
    assert result.status == "completed", result
    task = load_state(directory, warn=pytest.fail).tasks.get("t1")
    assert task is not None
    assert task.completion is not None
    assert task.completion.summary == ('word_count ok: 5 words; tally ok: {"a":2,"b":1}')
    # The counter saw them as any tool: by name, with the schema from the signature.
    counted = next(r for r in model.requests if r.role == "counter")
    specs = {spec.name: spec for spec in counted.tools}
    assert {"word_count", "tally", "read_file", "complete"} <= set(specs)
    assert "write_file" not in specs
    assert specs["tally"].parameters["properties"]["words"]["description"] == "the words."
    # The session's tools got them (the main agent has them too); the caller's
    # registry is left as it was.
    main = next(r for r in model.requests if r.role == "main")
    assert {"word_count", "tally"} <= {spec.name for spec in main.tools}
    assert "word_count" not in tools


async def test_a_class_based_tool_and_a_function_tool_side_by_side(make_deps: MakeDeps) -> None:
    # A registry holds both kinds; the standard tools are untouched by the new one.
    model = scripted(
        {"tool_calls": [call("list_files"), call("tally", words=["x"])]}, {"text": "ok"}
    )
    registry = workspace_tools()
    registry.add(tally)
    state, deps, _ = make_deps(model, registry)
    await run_turn(state, deps)
    assert [r[:2] for r in results(state.messages)] == [("list_files", "ok"), ("tally", "ok")]
    assert results(state.messages)[1][2] == '{"x":1}'
