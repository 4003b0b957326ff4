"""One call to run a session, one to resume it: `run(goal, model=...)` makes the session,
drives it to its end and returns a `RunResult` with the answer; `resume(directory)` goes
on with one that stopped. Underneath are `create_session`, `open_session` and `drive`
(team/drive.py), for a program that needs more than these calls give.

Both work from trio and from asyncio: from asyncio, the drive runs under trio in a thread
of its own and the caller's callbacks on the caller's loop (host/aio.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import tempfile
import threading
import warnings
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import cast

import httpx
import sniffio
import trio

from orchestrator.errors import ConfigError, SessionNotFound
from orchestrator.host.aio import CallerLoop, from_asyncio, in_trio
from orchestrator.host.mcp_asks import change_approver, elicitation_asker
from orchestrator.host.options import (
    EventHandler as EventHandler,  # its home on the faces
)
from orchestrator.host.options import (
    Making,
    Options,
    ResumeOptions,
    Resuming,
    RunOptions,
    takes,
)
from orchestrator.mcp import open_servers, split_tools
from orchestrator.models.base import Model
from orchestrator.models.fallback import Fallback, chain_specs
from orchestrator.models.http import make_client
from orchestrator.models.resolve import provider_names, resolve_model
from orchestrator.session.creation import create_session
from orchestrator.session.live import open_session
from orchestrator.session.memory import MemorySession, memory_manifest
from orchestrator.state.events import Event, EventSink, NullSink
from orchestrator.state.manifest import read_manifest
from orchestrator.team.asking import Decisions
from orchestrator.team.definitions import Definitions
from orchestrator.team.drive import Driven, RunResult, drive
from orchestrator.team.runtime import TeamHook
from orchestrator.team.settings import RunSettings, check_definitions
from orchestrator.tools.base import AnyTool, ToolRegistry
from orchestrator.tools.functions import HOST_LOOP


@dataclass(frozen=True, kw_only=True)
class _Wiring(Options):
    """The shared keywords as the drive takes them, with where the events go."""

    on_event: EventSink | EventHandler | None
    # The callbacks are bridged to the calling asyncio program's loop (`_for_caller`):
    # the drive runs under trio in a thread of its own.
    from_asyncio: bool = False
    # The asyncio program's loop, where its coroutine tools run (None under trio).
    caller: CallerLoop | None = None

    @classmethod
    def of(cls, given: Options, on_event: EventSink | EventHandler | None) -> _Wiring:
        shared = {field.name: getattr(given, field.name) for field in dataclasses.fields(Options)}
        return cls(**shared, on_event=on_event)


@takes(RunOptions)
async def run(given: RunOptions) -> RunResult:
    """Make a session for `goal` and run it until the main agent is done."""
    return await _run(given)


@takes(RunOptions)
def run_sync(given: RunOptions) -> RunResult:
    """`run` for a program without an event loop (a script, a REPL): runs it on trio
    until it ends and returns its result. Inside a running loop (asyncio, a notebook's
    cell, trio) it raises `RuntimeError`: await `run` there."""
    _outside_any_loop("run_sync", "run")
    return trio.run(_run, given)


async def _run(given: RunOptions) -> RunResult:
    if given.in_memory:
        return await in_memory(given, given.on_event)
    wiring = _for_caller(_Wiring.of(given, given.on_event))
    directory = new_session(given)
    return await _drive(_on_disk(directory.parent, directory.name), given.model, wiring, message="")


def new_session(given: Making) -> Path:
    """The directory of a new session for `given.goal`, not yet run (`run`'s first half)."""
    root = Path(given.sessions_dir) if given.sessions_dir is not None else _process_root()
    _, directory = create_session(
        root,
        goal=given.goal,
        model=_label(given.model),
        workspace=_workspace(given),
        settings=given.settings,
    )
    return directory


async def in_memory(given: Making, on_event: EventSink | EventHandler | None) -> RunResult:
    """`run` with `in_memory=True`: the session is a `MemorySession`, which nothing is
    written for (`stream` goes through here with its own `on_event`)."""
    if given.sessions_dir is not None:
        raise ConfigError(
            "in_memory=True keeps the session in memory only: give no sessions_dir "
            "(or leave in_memory out to keep the session there)"
        )
    manifest = memory_manifest(
        goal=given.goal, model=_label(given.model), workspace=_workspace(given)
    )
    session = MemorySession(manifest=manifest, warn=_warn)
    wiring = _for_caller(_Wiring.of(given, on_event))

    def opening() -> AbstractAsyncContextManager[Driven]:
        return contextlib.nullcontext(session)  # (nothing to open, nor to close)

    return await _drive(opening, given.model, wiring, message="")


def _workspace(given: Making) -> Path:
    where = Path(given.workspace) if given.workspace is not None else Path.cwd()
    if not where.is_dir():
        raise ConfigError(f"the workspace {where} is not a directory")
    return where


@takes(ResumeOptions)
async def resume(given: ResumeOptions) -> RunResult:
    """Go on with a session that stopped (killed, interrupted, failed, blocked), from
    where its journal left it; a completed one returns at once ("already finished")
    unless `message` says something new to its main agent."""
    return await _resume(given)


@takes(ResumeOptions)
def resume_sync(given: ResumeOptions) -> RunResult:
    """`resume` for a program without an event loop, as `run_sync` is `run`'s."""
    _outside_any_loop("resume_sync", "resume")
    return trio.run(_resume, given)


def _outside_any_loop(name: str, twin: str) -> None:
    """Raises when called inside a running loop, which `trio.run` cannot nest in."""
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return
    raise RuntimeError(
        f"{name}() was called inside a running {library} loop (a notebook's cell runs in "
        f"one): await orchestrator.{twin}(...) there instead"
    )


async def _resume(given: ResumeOptions) -> RunResult:
    return await resumed(
        given,
        given.session,
        given.sessions_dir,
        model=given.model,
        message=given.message,
        on_event=given.on_event,
    )


async def resumed(
    given: Options,
    session: Path | str,
    sessions_dir: Path | str | None,
    *,
    model: Model | str | None,
    message: str,
    on_event: EventSink | EventHandler | None,
) -> RunResult:
    """`resume`'s body, which `stream` and `stream_resume` go through with their own
    keywords and their own `on_event`."""
    wiring = _for_caller(_Wiring.of(given, on_event))
    root, session_id = locate(session, sessions_dir)
    asked = model is not None
    if model is None:
        model = read_manifest(root / session_id).model_spec(root / session_id)
    approvals = given.approvals if isinstance(given, Resuming) else None
    opening = _on_disk(root, session_id)
    return await _drive(opening, model, wiring, message=message, asked=asked, approvals=approvals)


def _label(model: Model | str) -> str:
    """What the manifest says of a model: a spec as it is; of an object, its name, which a
    resume makes again when it is a provider's spec; a scripted one is only a name."""
    if isinstance(model, str):
        return model
    name = model.spec if isinstance(model, Fallback) else model.name
    scripted = any(one.partition(":")[0] == "scripted" for one in chain_specs(name))
    return f"object:{name}" if scripted else name


_ROOT: list[Path] = []  # this process's temporary sessions root, once made
_ROOT_MADE = threading.Lock()


def _process_root() -> Path:
    """Where this process keeps the sessions of runs given no `sessions_dir`: one
    temporary directory, made by the first such run and shared by the others (not one
    per call), and kept when the process ends, so their sessions can be resumed."""
    with _ROOT_MADE:
        if not _ROOT:
            _ROOT.append(Path(tempfile.mkdtemp(prefix="orchestrator-sessions-")))
        return _ROOT[0]


def locate(session: Path | str, sessions_dir: Path | str | None) -> tuple[Path, str]:
    """(root, id) of a session given by its directory, or by its id and root."""
    if session is None:  # (mistyped, but what an in-memory run's `session_dir` is)
        raise SessionNotFound(
            "no session to resume: a run with in_memory=True keeps none "
            "(its RunResult.session_dir is None)"
        )
    if sessions_dir is not None:
        return Path(sessions_dir), str(session)
    directory = Path(session)
    if not directory.is_dir():
        raise SessionNotFound(
            f"no session directory {str(session)!r}: give the session's directory "
            "(RunResult.session_dir), or its id with sessions_dir= (where it is kept)"
        )
    directory = directory.resolve()
    return directory.parent, directory.name


Opening = Callable[[], AbstractAsyncContextManager[Driven]]
"""Opens the session a drive runs over (`_on_disk`, or an in-memory one as it is)."""


def _on_disk(root: Path, session_id: str) -> Opening:
    return partial(open_session, root, session_id, warn=_warn)


async def _drive(
    opening: Opening,
    model: Model | str,
    wiring: _Wiring,
    *,
    message: str,
    asked: bool = True,
    approvals: Decisions | None = None,
) -> RunResult:
    if wiring.from_asyncio:  # the same drive, under trio in a thread of its own
        on_trio = dataclasses.replace(wiring, from_asyncio=False)
        again = partial(_drive, message=message, asked=asked, approvals=approvals)
        return await in_trio(partial(again, opening, model, on_trio))
    # From asyncio, the program's coroutine tools run on its own loop (tools/functions.py).
    if wiring.caller is not None:
        HOST_LOOP.set(wiring.caller)  # (this trio run's, in a thread of its own)
    # What the program gave is what the model sees: the workspace tools only when given
    # (`[*orc.workspace_tools(), lookup]`), the agent types it names (the built-ins by
    # `orc.builtin_agents()`), and without any a plain agent (team/settings.py `plain`).
    agents = list(wiring.agents)
    servers, tools = split_tools(wiring.tools)
    async with contextlib.AsyncExitStack() as stack:
        live = await stack.enter_async_context(opening())
        # MCP servers start with the session (a resumed one's at their first call) and
        # stop with it (docs/mcp.md).
        opened = await stack.enter_async_context(open_servers(servers, kept=live.state.mcp))
        opened = await opened.pinned(live)  # the definitions this session took (mcp/pins.py)
        for line in opened.failed:
            _warn(line)
        registry = opened.added_to(ToolRegistry(cast(list[AnyTool], tools)))
        definitions = Definitions(
            d.model_copy(update={"tools": opened.names(d.tools)}) for d in agents
        )
        if isinstance(model, str):
            # Made only for a provider's spec: its TLS context (the system's certificates,
            # read anew for each client) is most of a call's time with a `Model` object.
            http = await stack.enter_async_context(make_client())
            model = _resolve(model, http, live.id, asked=asked)
        settings = RunSettings(
            model=model,
            tools=registry,
            ui=_sink(wiring.on_event),
            approve=wiring.approve,
            answer=wiring.answer,
            instructions=wiring.instructions,
            session=wiring.settings,
            prices=dict(wiring.prices or {}),
            definitions=definitions,
            plain=not agents,
            on_team=wiring.on_team,
            message=message,
            approvals=approvals or {},
            hooks=tuple(wiring.hooks),
        )
        # What the servers ask: the person's questions go to `answer` (none: nobody can
        # answer, the session stops blocked), completions to the agent's model.
        ask = None if wiring.answer is None else elicitation_asker(wiring.answer, live)
        confirm = None if wiring.approve is None else change_approver(wiring.approve, live)
        opened.answering(live, ask, by="host", confirm=confirm)
        # Each type given is used as given: one naming a tool not given (a built-in without
        # the workspace tools) is an error here, where `drive` would leave a built-in out.
        check_definitions(settings)
        return await drive(live, settings)


def _resolve(spec: str, http: httpx.AsyncClient, session_id: str, *, asked: bool) -> Model:
    """The model of a spec; `asked` False: the spec is the one the session was made with."""
    try:
        return resolve_model(spec, env=os.environ, http=http)
    except ConfigError as exc:
        if asked or spec.partition(":")[0] in provider_names():
            raise
        raise ConfigError(
            f"session {session_id} was run with the model {spec!r}, a name and not a spec "
            "that makes a model (a Model object given to run()): give it again, "
            "resume(..., model=...)"
        ) from exc


def _for_caller(wiring: _Wiring) -> _Wiring:
    """The wiring as the drive calls it: from asyncio, the caller's callbacks run on its
    own loop."""
    if not from_asyncio():
        return wiring
    check_on_team(wiring.on_team)
    caller = CallerLoop()
    return dataclasses.replace(
        wiring,
        on_event=None if wiring.on_event is None else caller.sink(_sink(wiring.on_event)),
        approve=None if wiring.approve is None else caller.function(wiring.approve),
        answer=None if wiring.answer is None else caller.function(wiring.answer),
        hooks=tuple(
            h if isinstance(h.run, str) else dataclasses.replace(h, run=caller.function(h.run))
            for h in wiring.hooks
        ),
        from_asyncio=True,
        caller=caller,
    )


def check_on_team(on_team: TeamHook | None) -> None:
    """`on_team` is refused from asyncio rather than called on the trio thread: a `Team`
    is a trio object, whose methods an asyncio program could not await."""
    if on_team is not None and from_asyncio():
        raise ConfigError(
            "on_team is for trio programs: the Team's methods are trio's, and under asyncio "
            "the session runs on a trio thread of its own (run it under trio to steer it)"
        )


def _warn(text: str) -> None:
    warnings.warn(text, RuntimeWarning, stacklevel=2)


def _sink(on_event: EventSink | EventHandler | None) -> EventSink:
    if on_event is None:
        return NullSink()
    if hasattr(on_event, "emit"):
        return on_event
    return _Handler(on_event)


class _Handler:
    """A function of one event as a sink."""

    def __init__(self, handler: EventHandler) -> None:
        self._handler = handler

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        result = self._handler(event)
        if inspect.isawaitable(result):
            await result
