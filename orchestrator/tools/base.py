"""What a tool is: a name, a description, a pydantic argument model whose JSON schema the
model sees, flags, and an async `run`. Tools report expected failures by raising
`ToolFailed`; the turn loop turns that (and anything else a tool raises) into an error
result the model reads."""

from __future__ import annotations

import functools
import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel

from orchestrator.loop.todos import TodoList, TodosChanged
from orchestrator.models.base import Model, ToolSpec
from orchestrator.state.events import EventSink, ToolProgress
from orchestrator.tools.workspace import Workspace

WORKSPACE_TOOLS = ("read_file", "write_file", "edit_file", "list_files", "grep", "shell")
"""The names of the workspace's six tools (tools/__init__.py `workspace_tools`), in order."""


@dataclass(frozen=True)
class ToolContext:
    """What a running tool may use: the workspace, the name of the calling agent, where
    it may write, and a marker naming the call, unique to the session and the call."""

    workspace: Workspace
    agent: str = "main"
    session: str = ""  # the session's id, when there is a session on disk
    # The session's directory, kept out of the shell sandbox's sight (None: none).
    session_directory: Path | None = None
    call: str = ""  # the running call's ref
    # The agent's write scope (its task's): the file tools write only where a path
    # resolves inside it. None: anywhere in the workspace (the main agent).
    write_scope: tuple[str, ...] | None = None
    tool: str = ""  # the running call's tool
    # Where the call's progress goes (the session's sink); None: nowhere.
    events: EventSink | None = None
    # Who runs a call in the background (the team; None: no call may), and, for a call
    # running there, where its output goes as it comes (a file of the session's:
    # `read_task_output` reads it while the call runs). A call has one when it runs in
    # the background.
    background: Backgrounder | None = None
    output: Callable[[bytes], None] | None = None
    # Whose todo lists the todo tools read and change (the team; None: no list here).
    todos: TodoHost | None = None
    # The calling agent's model, each call taking one of the session's model-call slots
    # as the agents' own do (an MCP server's sampling asks it); None: no model here.
    model: Model | None = None

    def for_call(self, call: str, tool: str, events: EventSink | None) -> ToolContext:
        """This context for one call: its ref, its tool and where its progress goes. What
        `dataclasses.replace` would make, without its checks of every field: one is made
        for every call."""
        made = object.__new__(type(self))
        made.__dict__.update(self.__dict__, call=call, tool=tool, events=events)
        return made

    @property
    def task(self) -> str | None:
        """The task whose agent calls (its id), or None for the main agent and the
        planner."""
        return task_of(self.agent)

    async def report_progress(self, message: str, percent: float | None = None) -> None:
        """Say how far the call has got: a `tool_progress` event for whoever watches the
        run (`on_event`, the transcript), not journaled and not read by any model."""
        if self.events is not None:
            await self.events.emit(
                ToolProgress(
                    agent=self.agent,
                    ref=self.call,
                    tool=self.tool,
                    message=message,
                    percent=percent,
                )
            )

    @property
    def call_marker(self) -> str:
        """Names the running call in the processes it starts (see tools/shell.py)."""
        return call_marker(self.session, self.agent, self.call) if self.session else ""


class TodoHost(Protocol):
    """What the todo tools need of the session (the team's oversight, team/oversight.py)."""

    def todos(self, agent: str) -> TodoList: ...

    def serial(self, agent: str) -> bool: ...

    async def change_todos(self, record: TodosChanged) -> None: ...


class Backgrounder(Protocol):
    """Runs a call in the background (team/background.py): `start` records it as a task
    of kind `tool`, starts it, and returns at once with the handle the model reads;
    `adopt` does the same for a call already running in the foreground, which `go_on`
    carries on (with the task's context: its `output` is the task's file). `after`: the
    seconds past which a foreground shell call moves there (None: never)."""

    @property
    def after(self) -> float | None: ...

    async def start(self, tool: AnyTool, args: BaseModel, ctx: ToolContext) -> ToolOutput: ...

    async def adopt(
        self,
        tool: AnyTool,
        args: BaseModel,
        ctx: ToolContext,
        go_on: Callable[[ToolContext], Awaitable[ToolOutput]],
        *,
        after: float,
    ) -> ToolOutput: ...


def task_of(agent: str) -> str | None:
    """The task an agent works (a task's agent is named by its task id, `t3`), or None
    for the main agent and the planners."""
    return agent if re.fullmatch(r"t\d+", agent) else None


def call_marker(session: str, agent: str, ref: str) -> str:
    return f"{session}/{agent}/{ref}"


@dataclass(frozen=True)
class ToolOutput:
    content: str
    status: Literal["ok", "error"] = "ok"
    # Mailbox messages this output hands to the calling agent (`wait_tasks`): journaled
    # with the result, as their delivery.
    delivers: tuple[str, ...] = ()
    # The call ends the agent's turn (`complete`, `ask_decision`, `report_blocked`): the
    # turn loop stops after this round.
    ends_turn: bool = False
    # The workspace paths the call changed, as the program saw them (the file a write
    # went to, resolved; what a shell command created, changed or deleted): journaled
    # with the result (`ToolResult.changed`), never read back from `content`.
    changed: tuple[str, ...] = ()
    # A command's exit code (the shell tool; None: it did not exit on its own, or no
    # command), for the verification that runs commands through the tool.
    exit_code: int | None = None

    @classmethod
    def error(cls, content: str, exit_code: int | None = None) -> ToolOutput:
        return cls(content, "error", exit_code=exit_code)


ArgsT = TypeVar("ArgsT", bound=BaseModel)


class Tool(ABC, Generic[ArgsT]):
    """Subclass with class attributes `name`, `description`, `args_model`, the flags,
    and implement `run`.

    `read_only`: never changes anything, so calls may run concurrently and are never
    gated by a permission prompt by default. `idempotent`: running it twice has the same
    effect as once, so after a crash an unfinished call is simply run again.
    """

    name: str
    description: str
    args_model: type[ArgsT]
    read_only: bool = False
    idempotent: bool = False
    # Whether the permission policy's default ("ask") applies; tools that change only the
    # session itself (delegating, reporting) run unasked unless a rule says otherwise.
    approval: bool = True
    # Whether an `interrupt` message to the calling agent may stop a call in flight (its
    # result then says so); tools that change nothing can always stop safely.
    interruptible: bool = False
    # Whether a call may run in the background (its arguments say `background: true`): it
    # is then a task of kind `tool`, and the agent goes on meanwhile (docs/tools.md).
    # `reports_progress`: it says how far it has got (`ctx.report_progress`).
    background: bool = False
    reports_progress: bool = False
    # Whether all it changes is the session, through the records it journals (delegating,
    # messaging, todos): its call needs no flush before it runs, since those records follow
    # its reply in the journal (write-ahead rule 1 of docs/session-format.md).
    journaled: bool = False
    # Whether its definition may be left out of requests until the agent loads it, when
    # an agent has many such tools (an MCP server's; tools/deferred.py).
    deferrable: bool = False

    @abstractmethod
    async def run(self, args: ArgsT, ctx: ToolContext) -> ToolOutput: ...

    def asks_anyway(self, args: ArgsT) -> str | None:
        """Why this call must be asked about even where a rule or a grant allows the
        tool (a shell command that asks for the network), or None."""
        return None

    async def recover(self, args: ArgsT, ctx: ToolContext) -> ToolOutput | None:
        """Settle a call of this tool that a crash cut off after its side effect started:
        stop what it left running (the shell tool kills the call's processes) and clean
        up what it left half done (a temporary file), then return its output if
        the tool can tell from the workspace that the effect took place whole, or that
        it did not start and runs now; None reports it `interrupted` (the default: the
        model decides). `ctx.call` is the cut-off call's ref."""
        return None

    def spec(self) -> ToolSpec:
        return _spec(self.name, self.description, self.args_model)


@functools.lru_cache(maxsize=256)
def _spec(name: str, description: str, args_model: type[BaseModel]) -> ToolSpec:
    # Made once per process: building a JSON schema costs about a millisecond a tool, and
    # every session (every team) asks again for the same tools. A spec is frozen.
    schema = args_model.model_json_schema()
    schema.pop("title", None)
    schema.setdefault("additionalProperties", False)  # unknown arguments are refused
    return ToolSpec(name=name, description=description, parameters=schema)


AnyTool = Tool[Any]


class ToolRegistry:
    """The tools one agent may call, by name."""

    def __init__(self, tools: Iterable[AnyTool] = ()) -> None:
        self._tools: dict[str, AnyTool] = {}
        self._specs: tuple[ToolSpec, ...] | None = None
        for tool in tools:
            self.add(tool)

    def add(self, tool: AnyTool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self._specs = None

    def get(self, name: str) -> AnyTool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def tools(self) -> list[AnyTool]:
        return list(self._tools.values())

    def specs(self) -> tuple[ToolSpec, ...]:
        # Asked for on every model call; building JSON schemas each time is wasted work.
        if self._specs is None:
            self._specs = tuple(tool.spec() for tool in self._tools.values())
        return self._specs

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        return ToolRegistry(self._tools[name] for name in names)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[AnyTool]:
        """The tools, in the order they were added: `[*orc.workspace_tools(), lookup]`."""
        return iter(list(self._tools.values()))
