"""Tools from plain functions: `@tool` reads a function's signature and docstring and
makes a `Tool` of it, so a custom tool is a few lines.

    @tool(read_only=True, idempotent=True)
    async def word_count(path: str, ctx: ToolContext) -> str:
        \"\"\"Count the words in a workspace file.

        Args:
            path: the file, relative to the workspace.
        \"\"\"

The name is the function's, the description the docstring's text before its sections,
the argument model (whose JSON schema the model sees) is built from the parameters, with
the `Args:` section's words as each one's description; a parameter annotated
`ToolContext` receives the call's context instead. What the function returns becomes the
call's output (`as_output`). docs/library.md#tools-from-functions is the user's guide.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import inspect
import re
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, get_type_hints, overload

import msgspec
import orjson
import pydantic
import trio
from pydantic import BaseModel, ConfigDict, Field

from orchestrator.errors import ToolInterrupted
from orchestrator.state.events import EventSink
from orchestrator.tools.base import Tool, ToolContext, ToolOutput
from orchestrator.tools.docstrings import parse_docstring

P = ParamSpec("P")
R = TypeVar("R")

DONE = "done"
"""The output of a call whose function returned None."""


class HostLoop(Protocol):
    """The loop of an asyncio program that runs the library (host/aio.py's `CallerLoop`),
    seen from the trio side: a coroutine tool's function runs there, so the asyncio
    clients it uses (a database driver, an HTTP client) work in it."""

    async def call(self, fn: Callable[[], Awaitable[R]]) -> R:
        """`fn()` awaited on the host's loop; cancelled, it cancels it there."""
        ...

    def bridged(self, sink: EventSink) -> EventSink:
        """`sink` (the trio side's) as code on the host's loop may call it."""
        ...


HOST_LOOP: ContextVar[HostLoop | None] = ContextVar("orchestrator_host_loop", default=None)
"""Set by an asyncio host for its run (host/run.py); None under trio, where a coroutine
tool is awaited on trio itself."""

# What providers accept as a tool's name (OpenAI's and Anthropic's rule).
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class FunctionTool(Tool[Any], Generic[P, R]):
    """A tool made of a function by `tool`: every other part of the library treats it as
    any class-based tool. `fn` is the function itself, and calling the tool calls it
    (`await word_count("a.txt", ctx)` in a test), bypassing the argument model.

    `read_only`, `idempotent` and `approval` are `Tool`'s flags; a read-only one is
    also `interruptible` (it changes nothing, so an interrupting message may stop it).
    `background`: the model may run a call in the background (its arguments get a
    `background` flag; docs/tools.md); one that takes a `ToolContext` reports progress
    through it."""

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        read_only: bool = False,
        idempotent: bool = False,
        approval: bool | None = None,
        background: bool = False,
    ) -> None:
        self.fn = fn
        self.name = name if name is not None else getattr(fn, "__name__", "")
        if not _TOOL_NAME.fullmatch(self.name):
            raise TypeError(
                f"{self.name!r} is not a tool name (1 to 64 letters, digits, '_' or '-'): "
                "pass name="
            )
        summary, documented = parse_docstring(inspect.getdoc(fn) or "")
        self.description = (description if description is not None else summary).strip()
        if not self.description:
            missing = (
                "its docstring has no text before its sections"
                if inspect.getdoc(fn)
                else f"give {_where(fn)} a docstring"
            )
            raise TypeError(
                f"tool {self.name!r} has no description: {missing} (its text before `Args:` "
                "is what the model reads), or pass description="
            )
        self.args_model, self._params = _args_model(fn, self.name, documented, background)
        self.background = background
        self.reports_progress = any(param.field is None for param in self._params)
        self._async = _is_async(fn)
        self.read_only = read_only
        self.idempotent = idempotent
        if approval is not None:
            self.approval = approval
        self.interruptible = read_only
        functools.update_wrapper(self, fn, updated=())
        try:
            self.spec()  # made now, so a schema pydantic cannot make fails here
        except pydantic.PydanticUserError as exc:
            raise TypeError(
                f"tool {self.name!r}: its arguments have no JSON schema: {exc}"
            ) from exc

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<FunctionTool {self.name} of {_where(self.fn)}>"

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        for param in self._params:
            value = ctx if param.field is None else getattr(args, param.field)
            if param.positional_only:
                positional.append(value)
            else:
                keywords[param.name] = value
        host = HOST_LOOP.get()
        if self._async and host is not None:
            result = await _on_host(host, self, positional, keywords, ctx)
        elif self._async:
            result = await self.fn(*positional, **keywords)  # type: ignore[misc]
        else:
            # In a worker thread: a plain function may block (files, a database driver,
            # a CPU-bound step) and must not stop the event loop while it does.
            call = functools.partial(self.fn, *positional, **keywords)
            result = await trio.to_thread.run_sync(call)
        return as_output(result, self.name)


async def _on_host(
    host: HostLoop,
    tool: FunctionTool[Any, Any],
    positional: list[Any],
    keywords: dict[str, Any],
    ctx: ToolContext,
) -> Any:
    """A coroutine tool's call on the asyncio host's loop, its context's progress events
    bridged back to the trio side. Cancelled there (not by us), the call is interrupted."""
    if ctx.events is not None:
        bridged = dataclasses.replace(ctx, events=host.bridged(ctx.events))
        positional = [bridged if value is ctx else value for value in positional]
        keywords = {k: bridged if value is ctx else value for k, value in keywords.items()}
    try:
        return await host.call(functools.partial(tool.fn, *positional, **keywords))
    except concurrent.futures.CancelledError:
        raise ToolInterrupted(
            f"interrupted: {tool.name} was cancelled on the program's asyncio loop before it "
            "finished, so it may or may not have taken effect"
        ) from None


@overload
def tool(fn: Callable[P, R]) -> FunctionTool[P, R]: ...


@overload
def tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    idempotent: bool = False,
    approval: bool | None = None,
    background: bool = False,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    idempotent: bool = False,
    approval: bool | None = None,
    background: bool = False,
) -> FunctionTool[P, R] | Callable[[Callable[P, R]], FunctionTool[P, R]]:
    """Make a tool of a function, `@tool` or `@tool(read_only=True, ...)`.

    `name`: the function's unless given. `description`: the docstring's text before its
    first section (`Args:`, `Returns:`, `Raises:`, ...) unless given. `read_only`,
    `idempotent`, `approval` (None: `Tool`'s default, asked about under the policy's
    default): the flags of `Tool`; `background`: the model may run a call in the
    background (docs/tools.md). A function the tool cannot be made of (no
    description, `*args` or `**kwargs`, a parameter without an annotation, an `Args:`
    entry for no parameter, a type with no JSON schema) is a `TypeError` here."""

    def make(fn: Callable[P, R]) -> FunctionTool[P, R]:
        return FunctionTool(
            fn,
            name=name,
            description=description,
            read_only=read_only,
            idempotent=idempotent,
            approval=approval,
            background=background,
        )

    return make if fn is None else make(fn)


def as_output(value: object, name: str = "the tool") -> ToolOutput:
    """A function's return value as a call's output: text as is, a `ToolOutput` as is,
    None as "done", anything else as JSON (pydantic models, msgspec structs and
    dataclasses as their fields, at any depth)."""
    if isinstance(value, ToolOutput):
        return value
    if isinstance(value, str):
        return ToolOutput(value)
    if value is None:
        return ToolOutput(DONE)
    try:
        text = orjson.dumps(value, default=_plain, option=orjson.OPT_NON_STR_KEYS)
    except TypeError as exc:  # orjson.JSONEncodeError is one
        raise TypeError(
            f"{name} returned a {type(value).__name__} that is not JSON: {exc}"
        ) from exc
    return ToolOutput(text.decode())


def _plain(value: object) -> object:
    """orjson's fallback: what it cannot write itself, as values it can."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, set | frozenset):
        return list(value)
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


# --- reading the function ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Param:
    name: str
    field: str | None  # its field in the argument model; None: it gets the ToolContext
    positional_only: bool


BACKGROUND_FIELD = (
    bool,
    Field(
        False,
        description="Run it in the background: you get a task id at once and go on; its "
        "end comes to you as a message (wait_tasks waits for it).",
    ),
)


def _args_model(
    fn: Callable[..., Any], tool_name: str, documented: dict[str, str], background: bool
) -> tuple[type[BaseModel], tuple[_Param, ...]]:
    """The argument model of `fn`'s parameters (and the `background` flag, for a tool
    that may run there), and how to pass each to it."""
    where = _where(fn)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"tool {tool_name!r}: cannot read the signature of {where}") from exc
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:  # NameError mostly: a name only imported under TYPE_CHECKING
        raise TypeError(
            f"tool {tool_name!r}: cannot resolve the annotations of {where}: {exc}"
        ) from exc
    undocumented = sorted(set(documented) - set(signature.parameters))
    if undocumented:
        raise TypeError(
            f"tool {tool_name!r}: its docstring's Args: names {', '.join(undocumented)}, "
            f"not a parameter of {where}"
        )
    fields: dict[str, Any] = {}
    params = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind == param.VAR_POSITIONAL else "**"
            raise TypeError(
                f"tool {tool_name!r}: {where} takes {star}{param.name}; a tool's arguments "
                "are named, each with its type"
            )
        if param.name not in hints:
            raise TypeError(
                f"tool {tool_name!r}: parameter {param.name!r} of {where} has no annotation; "
                "its type is what the model is told to pass"
            )
        positional_only = param.kind == param.POSITIONAL_ONLY
        hint = hints[param.name]
        if hint is ToolContext or hint == ToolContext | None:
            params.append(_Param(param.name, None, positional_only))
            continue
        default = ... if param.default is param.empty else param.default
        # A name pydantic keeps for itself (`json`, `copy`, `model_config`, `_x`) is the
        # field's alias: the schema and the model's arguments still use the name.
        field = param.name
        alias = None
        if hasattr(BaseModel, field) or field.startswith("_"):
            field, alias = f"arg_{len(params)}{field}", field
        extra: dict[str, Any] = {"alias": alias} if alias else {}
        if param.name in documented:
            extra["description"] = documented[param.name]
        fields[field] = (hint, Field(default, **extra))
        params.append(_Param(param.name, field, positional_only))
    if background:
        _add_background(fields, tool_name, where)
    model_name = "".join(part.title() for part in tool_name.replace("-", "_").split("_"))
    config = ConfigDict(extra="forbid", protected_namespaces=())
    try:
        model = pydantic.create_model(
            f"{model_name or 'Tool'}Args",
            __config__=config,
            __module__=getattr(fn, "__module__", None) or __name__,
            **fields,
        )
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError) as exc:
        raise TypeError(f"tool {tool_name!r}: no argument model for {where}: {exc}") from exc
    return model, tuple(params)


def _add_background(fields: dict[str, Any], tool_name: str, where: str) -> None:
    if "background" in fields:
        raise TypeError(
            f"tool {tool_name!r}: {where} has a parameter named 'background', the flag a "
            "tool that may run in the background gets: rename it"
        )
    fields["background"] = BACKGROUND_FIELD


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
        raise TypeError(f"{_where(fn)} is a generator; a tool's function returns its output once")
    call = getattr(fn, "__call__", None)  # noqa: B004 (an object with an async __call__)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def _where(fn: Callable[..., Any]) -> str:
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{getattr(fn, '__module__', None) or '?'}.{qualname}"
