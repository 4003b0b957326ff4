"""Agent definitions: what a subagent of each role is (system prompt, tools, model,
limits), as data. Built in: `worker` (every workspace tool) and `explorer` (the
read-only ones); more come from TOML files (agent_files.py). The main agent's own role is
`main` and is not an agent definition. docs/agents.md is the user's guide.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal, Self, TypeGuard, final

from pydantic import (
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from orchestrator.errors import ConfigError
from orchestrator.tools.base import WORKSPACE_TOOLS, AnyTool, Tool
from orchestrator.tools.permissions import parse_rules

"""The names of the standard workspace tools (`orchestrator.tools.workspace_tools`)."""
READ_ONLY_TOOLS: Final = frozenset({"read_file", "list_files", "grep"})
"""The workspace tools that never change anything. A tool not named here (a custom one
too) counts as one that writes: `read_only` errs on the side of caution."""
MAIN_ROLE: Final = "main"
BUILTIN: Final = "built-in"
"""What `Definitions.sources` says for a built-in definition."""

_ROLE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
# How far each resume policy lets a task run again without asking, least first.
_RESUME_RANK: Final = {"never": 0, "ask": 1, "auto": 2}

Resume = Literal["auto", "ask", "never"]


class AgentDefinition(BaseModel, frozen=True, extra="forbid"):
    """One role a subagent can have. The `prompt` is the whole system prompt and is the
    same for every agent of the role (the task comes as a message), so that providers
    can cache it across agents.

    `tools` names the role's tools; an entry may also be a tool object (an `@tool`
    function, a `Tool` instance), which the definition holds by its name, keeping the
    object in `given_tools`: the team adds it to the session's tools."""

    name: str
    description: str = ""  # one line the main agent reads when it chooses a type
    prompt: str
    tools: tuple[str, ...] = ()  # none: the coordination tools only (complete, ...)
    model: str | None = None  # None: the config's model for this role
    max_rounds: int = Field(default=50, gt=0)
    # Agents of this role running at once in a session (beside `[team] max_live` for all);
    # None: no limit of the role's own.
    max_live: int | None = Field(default=None, gt=0)
    may_delegate: bool = False
    max_continues: int = Field(default=3, ge=0)  # nudges after a turn ends without complete
    retries: int = Field(default=0, ge=0, le=10)  # attempts after a failed one, automatically
    serial: bool = False  # its todo list is a queue: completing an item starts the next
    # Shell commands that must pass, in the workspace, before its `complete` is accepted.
    verify: tuple[str, ...] = ()
    resume: Resume = "auto"
    allow: tuple[str, ...] = ()  # permission rules, as `--allow` takes them
    _given: tuple[AnyTool, ...] = PrivateAttr(default=())

    if TYPE_CHECKING:
        # The constructor as a type checker sees it, with or without pydantic's mypy
        # plugin: `tools` takes tool objects as well as names (the validators keep the
        # objects in `given_tools`), which the field's own type, names once made, cannot
        # say. tests/team/test_definitions.py checks it names every field.
        def __init__(
            self,
            *,
            name: str,
            prompt: str,
            description: str = "",
            tools: Sequence[str | AnyTool] = (),
            model: str | None = None,
            max_rounds: int = 50,
            max_live: int | None = None,
            may_delegate: bool = False,
            max_continues: int = 3,
            retries: int = 0,
            serial: bool = False,
            verify: Sequence[str] = (),
            resume: Resume = "auto",
            allow: Sequence[str] = (),
        ) -> None: ...

    @property
    def given_tools(self) -> tuple[AnyTool, ...]:
        """The tools `tools` was given as objects rather than names, in its order."""
        return tuple(tool for tool in self._given if tool.name in self.tools)

    @property
    def read_only(self) -> bool:
        """True when none of the role's tools can change anything (a tool given as an
        object counts by its own flag)."""
        given = {tool.name: tool.read_only for tool in self._given}
        return all(given.get(tool, tool in READ_ONLY_TOOLS) for tool in self.tools)

    @model_validator(mode="wrap")
    @classmethod
    def _tool_objects(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """Keeps the tool objects `tools` was given (`_tool_names` makes them names)."""
        given = data.get("tools") if isinstance(data, dict) else None
        definition = handler(data)
        if _sequence(given):
            definition._given = tuple(t for t in given if isinstance(t, Tool))
        return definition

    @field_validator("name")
    @classmethod
    def _role_name(cls, name: str) -> str:
        if not _ROLE_NAME.fullmatch(name):
            raise ValueError(
                f"{name!r} is not a role name (lowercase letters, digits, '-' and '_', "
                "starting with a letter or digit)"
            )
        if name == MAIN_ROLE:
            raise ValueError("'main' is the main agent's role, not a subagent type")
        return name

    @field_validator("description")
    @classmethod
    def _one_line(cls, description: str) -> str:
        description = description.strip()
        if "\n" in description or "\r" in description:
            raise ValueError("must be one line")
        return description

    @field_validator("prompt")
    @classmethod
    def _not_blank(cls, prompt: str) -> str:
        if not prompt.strip():
            raise ValueError("must not be empty")
        return prompt

    @field_validator("tools", mode="wrap")
    @classmethod
    def _tool_names(
        cls, given: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> tuple[str, ...]:
        """The names of the tools, each once; each a known tool (`known_tools` in the
        validation context, when there is one), or given as a tool object."""
        objects = {t.name for t in given if isinstance(t, Tool)} if _sequence(given) else set()
        if objects:
            given = [t.name if isinstance(t, Tool) else t for t in given]
        tools: tuple[str, ...] = handler(given)
        twice = sorted({tool for tool in tools if tools.count(tool) > 1})
        if twice:
            raise ValueError(f"listed more than once: {', '.join(twice)}")
        known = info.context.get("known_tools") if isinstance(info.context, dict) else None
        if known is not None:
            # An MCP selector (`mcp:SERVER/GLOB`) is checked once the servers are open.
            unknown = [
                tool
                for tool in tools
                if tool not in known and tool not in objects and not tool.startswith("mcp:")
            ]
            if unknown:
                raise ValueError(
                    f"unknown tool {', '.join(map(repr, unknown))}; the known tools are "
                    f"{', '.join(sorted(known))}"
                )
        return tools

    @field_validator("model")
    @classmethod
    def _model_spec(cls, model: str | None) -> str | None:
        if model is not None:
            provider, sep, name = model.partition(":")
            if not (provider and sep and name):
                raise ValueError(f"{model!r} is not PROVIDER:NAME (anthropic:claude-sonnet-4-5)")
        return model

    @field_validator("allow")
    @classmethod
    def _rules(cls, allow: tuple[str, ...]) -> tuple[str, ...]:
        parse_rules(list(allow))  # its ValueError says what is wrong with which rule
        return allow


def _sequence(value: object) -> TypeGuard[list[Any] | tuple[Any, ...]]:
    return isinstance(value, list | tuple)


# --- built-ins --------------------------------------------------------------------------

_SHARED_RULES = """\
You work in a workspace directory that other agents are changing at the same time. \
Every path you use is relative to the workspace root, and shell commands run there.

How you work with your owner, the agent that delegated the task:
- Call report_progress at real milestones (a cause found, a part done, the tests \
passing), with a one-line summary. Not after every step.
- When a choice belongs to your owner (behaviour, an interface, a trade-off the task \
does not settle), call ask_decision with the question and the options, then end your \
turn: the answer arrives as your next message.
- When you cannot go on (a missing credential, a dependency, unclear input, a broken \
workspace), call report_blocked with the category and the reason, then end your turn.
- When you find something your owner must know even though you can go on (a security \
hole, lost data, a wider breakage), call raise_risk.
- When the task as given is wrong, or much larger than it looks, call \
request_direction_change with what you propose instead.
- Messages from your owner may arrive while you work: an answer, more information, or \
a correction. A correction replaces the earlier instruction.

Stay on the task: do not fix, refactor or tidy what it does not need.
"""

WORKER_PROMPT: Final = f"""\
You are a worker: a subagent that carries out one task delegated to you.

{_SHARED_RULES}
Your write scope: the task message may name the files or patterns you may change. \
Change only those; other agents own the rest, so never revert or rewrite their changes. \
If the task needs a change outside your scope, do not make it: call \
request_direction_change, or report_blocked if you cannot go on without it. Without a \
write scope, change only what the task needs.

Inspect before you change, make the smallest change that does the job, then verify it: \
run the tests, the build or the command that shows it works, and fix what fails.

When the task is done, call complete with a summary of what you did, the files you \
changed, the verification you ran and its result, the known risks, and follow-ups. The \
task is not finished until you call complete: a turn that ends without it is sent back \
to you to continue.
"""

EXPLORER_PROMPT: Final = f"""\
You are an explorer: a subagent that finds things out for one task delegated to you, \
and changes nothing. Your tools only read.

{_SHARED_RULES}
Look before you conclude: read the code, search for every use, and check each claim \
against the files. Say what you saw, with paths and line numbers, and say plainly what \
you could not establish. If the task needs a change, do not look for a way to make it: \
describe the change in your summary, for your owner to hand to a worker.

When you have the answer, call complete with a summary of what you found and the \
evidence for it, no files changed, how you checked it, the known risks, and follow-ups. \
The task is not finished until you call complete: a turn that ends without it is sent \
back to you to continue.
"""

WORKER: Final = AgentDefinition(
    name="worker",
    description="Carries out one task: reads, changes files, runs commands, verifies.",
    prompt=WORKER_PROMPT,
    tools=WORKSPACE_TOOLS,
)
EXPLORER: Final = AgentDefinition(
    name="explorer",
    description="Answers a question about the workspace by reading and searching; changes nothing.",
    prompt=EXPLORER_PROMPT,
    tools=("read_file", "list_files", "grep"),
)

_BUILTINS: Final = MappingProxyType({WORKER.name: WORKER, EXPLORER.name: EXPLORER})


def builtin_agents() -> tuple[AgentDefinition, ...]:
    """The built-in agent types, `worker` and `explorer`, for `agents=` (they use the
    workspace tools, which go in `tools=`: `orc.workspace_tools()`)."""
    return tuple(_BUILTINS.values())


# --- the set of definitions -------------------------------------------------------------


@final
class Definitions:
    """The agent definitions of a session, by role: immutable. `sources(name)` says
    where each came from: `"built-in"` and the files that changed it, in order.
    `given_tools()` are the tool objects the definitions bring (`AgentDefinition.tools`):
    two different tools of one name are a `ConfigError` naming both types."""

    def __init__(
        self,
        definitions: Iterable[AgentDefinition],
        *,
        sources: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        by_name: dict[str, AgentDefinition] = {}
        objects: dict[str, tuple[AnyTool, str]] = {}
        for definition in definitions:
            if definition.name in by_name:
                raise ConfigError(f"agent type {definition.name!r} is defined twice")
            by_name[definition.name] = definition
            for tool in definition.given_tools:
                seen, role = objects.setdefault(tool.name, (tool, definition.name))
                if seen is not tool:
                    raise ConfigError(
                        f"two different tools are named {tool.name!r}: one given in agent "
                        f"type {role!r}, another in agent type {definition.name!r}"
                    )
        self._given = MappingProxyType(objects)
        self._definitions = MappingProxyType(by_name)
        given = sources or {}
        self._sources = MappingProxyType(
            {name: tuple(given.get(name, ("in code",))) for name in by_name}
        )

    @classmethod
    def builtin(cls) -> Definitions:
        return cls(_BUILTINS.values(), sources={name: [BUILTIN] for name in _BUILTINS})

    def usable(self, tool_names: Iterable[str]) -> Definitions:
        """These definitions less the built-in types (unchanged by any file) that name a
        tool not among `tool_names` (the session's, with those given in a definition):
        `drive`'s team has them. A session given tools of its own
        (a registry without the workspace tools) has no `worker` or `explorer`, rather
        than refusing to run. A type that is not a built-in keeps an unknown tool, which
        the run refuses, naming it (team/settings.py `check_definitions`)."""
        known = {*tool_names, *self._given}  # a tool given as an object is the session's
        left_out = {
            d.name for d in self if d == _BUILTINS.get(d.name) and not known.issuperset(d.tools)
        }
        if not left_out:
            return self
        return Definitions(
            (d for d in self if d.name not in left_out),
            sources={name: self._sources[name] for name in self.names() if name not in left_out},
        )

    def given_tools(self) -> Mapping[str, tuple[AnyTool, str]]:
        """The tool objects the definitions were given, by name, each with the first
        agent type that has it."""
        return self._given

    def get(self, name: str) -> AgentDefinition:
        try:
            return self._definitions[name]
        except KeyError:
            raise ConfigError(
                f"unknown agent type {name!r}; the agent types are {', '.join(self.names())}"
            ) from None

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._definitions))

    def live_limit(self, name: str) -> int | None:
        """The type's own limit on its live tasks (none for a type no longer defined: its
        task fails when it starts, saying so)."""
        definition = self._definitions.get(name)
        return definition.max_live if definition is not None else None

    def sources(self, name: str) -> tuple[str, ...]:
        self.get(name)
        return self._sources[name]

    def __contains__(self, name: object) -> bool:
        return name in self._definitions

    def __iter__(self) -> Iterator[AgentDefinition]:
        return iter(self._definitions[name] for name in self.names())

    def __len__(self) -> int:
        return len(self._definitions)

    def __repr__(self) -> str:
        return f"Definitions({', '.join(self.names())})"
