"""The keywords of the four calls (`run`, `resume`, `stream`, `stream_resume`), each
defined once, with its default and its doc line, in the frozen dataclasses below; `takes`
makes each call's signature from its dataclass.

A call is written as a function of its options value, `run(given: RunOptions)`, and
`@takes(RunOptions)` turns it into `run(goal, *, model, ...)`: the dataclass's own
parameters, which mypy and an editor check a caller's keywords against (a `ParamSpec`
taken from the dataclass's constructor) and which `help` and `inspect.signature` list,
each with its default and type. A keyword the four share is one line in `Options`; one
of some of them, one line in the class of those.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

from orchestrator.mcp.servers import McpServer
from orchestrator.models.base import Model
from orchestrator.prices.cost import Price
from orchestrator.state.events import Event, EventSink
from orchestrator.state.settings import SessionSettings
from orchestrator.team.asking import HostApprover, QuestionAnswerer
from orchestrator.team.definitions import AgentDefinition
from orchestrator.team.hook_runs import Hook
from orchestrator.team.runtime import TeamHook
from orchestrator.tools.base import AnyTool
from orchestrator.tools.permissions import Denied, Grant

P = ParamSpec("P")
K = TypeVar("K")  # an options value
R = TypeVar("R")

EventHandler = Callable[[Event], Awaitable[None] | None]
"""What `on_event` may be besides an `EventSink`: a function (plain or async) of one
event."""


@dataclass(frozen=True, kw_only=True)
class Options:
    """The keywords the four calls share:

    `agents`: the agent types the main agent may delegate to (`orc.builtin_agents()` are
    `worker` and `explorer`); none: a plain agent, offered only its tools. `tools`: the
    session's tools, the main agent's all (the workspace's six are
    `orc.workspace_tools()`, the todo tools `orc.todo_tools()`: each only when given; an
    `McpServer` gives its tools, started with the session and stopped with it). A resume
    needs the agent types and tools the session ran with: they are not kept in it.
    `approve`: answers the calls the permission rules ask about (None: read-only tools
    run, the others are refused with "no approver given"). `answer`: answers subagents'
    questions first (None: their owners do). `instructions`: added to the main agent's
    system prompt. `settings`: the session's `SessionSettings` (None: the defaults, or on
    a resume the journaled ones, which given ones replace when they differ). `prices`:
    dollars per million tokens by model, for the cost. `on_team`: called with the running
    `Team` before the main agent starts, and awaited when it is a coroutine function (trio
    only: its methods are trio's). `hooks`: the person's own rules at each step, each an
    `orc.Hook(event, run)` whose `run` is a function of the event (plain or async) or a
    command line (docs/hooks.md)."""

    agents: Iterable[AgentDefinition] = ()
    tools: Iterable[AnyTool | McpServer] = ()
    approve: HostApprover | None = None
    answer: QuestionAnswerer | None = None
    instructions: str = ""
    settings: SessionSettings | None = None
    prices: Mapping[str, Price] | None = None
    on_team: TeamHook | None = None
    hooks: Iterable[Hook] = ()


@dataclass(frozen=True)
class Making(Options):
    """`goal`: what the new session is for. `model`: a `Model`, or a spec as the command
    line takes it ("openai:gpt-4.1", "scripted:script.json"; keys from the environment).
    `workspace`: where the agents' tools work (None: the current directory).
    `sessions_dir`: where the session is kept (None: one temporary directory per
    process, shared by its runs and kept; the session is named in
    `RunResult.session_dir`). `in_memory`: keep the session in memory only, not on
    disk: nothing is written, `RunResult.session_dir` is None, and it cannot be
    resumed (with `sessions_dir`, a `ConfigError`)."""

    goal: str
    _: KW_ONLY
    model: Model | str
    workspace: Path | str | None = None
    sessions_dir: Path | str | None = None
    in_memory: bool = False


@dataclass(frozen=True)
class Resuming(Options):
    """`session`: the session's directory (`RunResult.session_dir`), or its id with
    `sessions_dir`. `sessions_dir`: where the session is kept, when `session` is its id.
    `model`: None takes the one the session was made with, when that is a spec (a
    `Model` object given to `run` has to be given again). `message`: said to the main
    agent, or the answer to the oldest question nobody answered (a `blocked` session).
    `approvals`: the decisions on calls parked for approval (`RunResult.approvals`), by
    request id: True runs the call, `Denied("why")` (or False) refuses it with the reason
    the model reads, a `Grant` runs it and allows more; journaled before any of them
    runs. An id that is no parked call of the session raises `SessionError`; a parked
    call left undecided stays parked (the run ends `blocked` again)."""

    session: Path | str
    _: KW_ONLY
    sessions_dir: Path | str | None = None
    model: Model | str | None = None
    message: str = ""
    approvals: Mapping[str, bool | Denied | Grant] | None = None


@dataclass(frozen=True, kw_only=True)
class RunOptions(Making):
    """`on_event`: an `EventSink`, or a function (plain or async) called with each event
    once it is journaled (None: nowhere)."""

    on_event: EventSink | EventHandler | None = None


@dataclass(frozen=True, kw_only=True)
class ResumeOptions(Resuming):
    """`on_event`: as for `run`, an `EventSink` or a function of one event (None:
    nowhere)."""

    on_event: EventSink | EventHandler | None = None


@dataclass(frozen=True, kw_only=True)
class StreamOptions(Making):
    """`buffer`: how many events may wait unread before the run waits for the reader."""

    buffer: int = 16


@dataclass(frozen=True, kw_only=True)
class StreamResumeOptions(Resuming):
    """`buffer`: as for `stream`."""

    buffer: int = 16


def takes(options: Callable[P, K]) -> Callable[[Callable[[K], R]], Callable[P, R]]:
    """`body` called with `options(...)`, taking the options' parameters as its own."""
    kind: object = options  # `options` itself stays the constructor, for the types
    assert isinstance(kind, type)  # a dataclass, whose classes' docs are read too
    parameters = inspect.signature(options).parameters.values()
    shared = {field.name for field in dataclasses.fields(Options)}
    # The call's own keywords first (`model` before `agents`), in their classes' order.
    ordered = sorted(parameters, key=lambda parameter: parameter.name in shared)
    # Their docs in the same order: the classes below `Options` from the top, then it.
    own = kind.__mro__[: kind.__mro__.index(Options)]
    keywords_doc = "\n\n".join(inspect.cleandoc(c.__doc__ or "") for c in [*reversed(own), Options])

    def made(body: Callable[[K], R]) -> Callable[P, R]:
        returns = inspect.signature(body).return_annotation
        signature = inspect.Signature(ordered, return_annotation=returns)

        def given(*args: P.args, **kwargs: P.kwargs) -> K:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:  # named as a plain `def` names itself, not by the class
                raise TypeError(f"{body.__name__}() {exc}") from None
            return options(*args, **kwargs)

        call: Callable[P, R]
        if inspect.iscoroutinefunction(body):
            coroutine = cast(Callable[[K], Awaitable[Any]], body)

            async def awaited(*args: P.args, **kwargs: P.kwargs) -> Any:
                return await coroutine(given(*args, **kwargs))

            call = cast(Callable[P, R], awaited)  # a coroutine function still, for `help`
        else:

            def call(*args: P.args, **kwargs: P.kwargs) -> R:
                return body(given(*args, **kwargs))

        # Not `functools.wraps`: its `__wrapped__` would lead `inspect` to `body`'s own
        # parameter (the options value) rather than to the signature made here.
        functools.update_wrapper(call, body, ("__module__", "__name__", "__qualname__"), ())
        # As `help` shows them: the annotations as written, like a plain `def`'s (a
        # function's `__signature__` is unknown to mypy).
        setattr(call, "__signature__", signature)  # noqa: B010
        call.__doc__ = f"{inspect.cleandoc(body.__doc__ or '')}\n\n{keywords_doc}"
        # For `typing.get_type_hints(run)`, evaluated here where the options' names are.
        call.__annotations__ = {
            **{p.name: typing.get_type_hints(options)[p.name] for p in ordered},
            "return": typing.get_type_hints(body)["return"],
        }
        return call

    return made
