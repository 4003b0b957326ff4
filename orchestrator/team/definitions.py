"""Agent definitions: what a subagent of each role is (system prompt, tools, model,
limits), as data.

Built in: `worker` (every workspace tool) and `explorer` (the read-only ones). More come
from TOML files, one definition per file, the file's stem its default name, read in
this order, each layer over the one before (a file naming an existing role changes only
the keys it sets):

1. the built-ins;
2. `<user config dir>/agents/*.toml`: the user's words, which may define or change
   anything;
3. `<project>/.orchestrator/agents/*.toml`: the repository's words. Until the user has
   trusted the project, these may only narrow (see `_widening`); anything wider is
   asked about once and remembered in the `TrustStore`, or refused.

The main agent's own role is `main` and is not an agent definition. docs/agents.md is
the user's guide to all of this.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Literal, final

import orjson
from pydantic import BaseModel, Field, ValidationError, ValidationInfo, field_validator

from orchestrator.errors import ConfigError
from orchestrator.team.trust import TrustStore, fingerprint
from orchestrator.tools.permissions import parse_rules

WORKSPACE_TOOLS: Final = ("read_file", "write_file", "edit_file", "list_files", "grep", "shell")
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
    can cache it across agents."""

    name: str
    description: str = ""  # one line the main agent reads when it chooses a type
    prompt: str
    tools: tuple[str, ...]
    model: str | None = None  # None: the config's model for this role
    max_rounds: int = Field(default=50, gt=0)
    may_delegate: bool = False
    max_continues: int = Field(default=3, ge=0)  # nudges after a turn ends without complete
    retries: int = Field(default=0, ge=0, le=10)  # attempts after a failed one, automatically
    serial: bool = False  # its todo list is a queue: completing an item starts the next
    # Shell commands that must pass, in the workspace, before its `complete` is accepted.
    verify: tuple[str, ...] = ()
    resume: Resume = "auto"
    allow: tuple[str, ...] = ()  # permission rules, as `--allow` takes them

    @property
    def read_only(self) -> bool:
        """True when none of the role's tools can change anything."""
        return all(tool in READ_ONLY_TOOLS for tool in self.tools)

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

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, tools: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        twice = sorted({tool for tool in tools if tools.count(tool) > 1})
        if twice:
            raise ValueError(f"listed more than once: {', '.join(twice)}")
        known = info.context.get("known_tools") if isinstance(info.context, dict) else None
        if known is not None:
            unknown = [tool for tool in tools if tool not in known]
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


# --- the set of definitions -------------------------------------------------------------


@final
class Definitions:
    """The agent definitions of a session, by role: immutable. `sources(name)` says
    where each came from: `"built-in"` and the files that changed it, in order."""

    def __init__(
        self,
        definitions: Iterable[AgentDefinition],
        *,
        sources: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        by_name: dict[str, AgentDefinition] = {}
        for definition in definitions:
            if definition.name in by_name:
                raise ConfigError(f"agent type {definition.name!r} is defined twice")
            by_name[definition.name] = definition
        self._definitions = MappingProxyType(by_name)
        given = sources or {}
        self._sources = MappingProxyType(
            {name: tuple(given.get(name, ("in code",))) for name in by_name}
        )

    @classmethod
    def builtin(cls) -> Definitions:
        return cls([WORKER, EXPLORER], sources={"worker": [BUILTIN], "explorer": [BUILTIN]})

    def get(self, name: str) -> AgentDefinition:
        try:
            return self._definitions[name]
        except KeyError:
            raise ConfigError(
                f"unknown agent type {name!r}; the agent types are {', '.join(self.names())}"
            ) from None

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._definitions))

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


# --- loading ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _File:
    label: str  # how messages name it: relative to the project, or the full path
    data: dict[str, Any]

    @property
    def stem(self) -> str:
        return Path(self.label).stem

    @property
    def name(self) -> Any:
        return self.data.get("name", self.stem)


def load_definitions(
    *,
    project_dir: Path | None,
    user_dir: Path | None,
    trust: TrustStore | None,
    ask: Callable[[str], bool] | None,
    known_tools: Collection[str],
) -> Definitions:
    """The built-ins, then `<user_dir>/agents/*.toml`, then
    `<project_dir>/.orchestrator/agents/*.toml`, each over the one before.

    Project files that would widen a definition (see docs/agents.md) need the user's
    trust: already in `trust`, or given by `ask` (called at most once, with a question
    that lists every such setting; a yes is remembered in `trust`). Without either,
    they are refused. Every problem is a `ConfigError` naming the file and the field."""
    definitions = {d.name: d for d in Definitions.builtin()}
    sources: dict[str, tuple[str, ...]] = {name: (BUILTIN,) for name in definitions}

    def apply(built: list[tuple[_File, AgentDefinition]]) -> None:
        for file, definition in built:
            definitions[definition.name] = definition
            sources[definition.name] = (*sources.get(definition.name, ()), file.label)

    if user_dir is not None:
        files = _read_dir(user_dir / "agents", label=str)
        apply(_build_all(files, definitions, known_tools))
    if project_dir is not None:
        files = _read_dir(
            project_dir / ".orchestrator" / "agents",
            label=lambda path: path.relative_to(project_dir).as_posix(),
        )
        built = _build_all(files, definitions, known_tools)
        wider = [
            _Widening(file, definition, items, definitions.get(definition.name))
            for file, definition in built
            if (items := _widening(definition, definitions.get(definition.name)))
        ]
        if wider:
            _require_trust(project_dir, wider, trust=trust, ask=ask, user_dir=user_dir)
        apply(built)
    return Definitions(definitions.values(), sources=sources)


def _read_dir(directory: Path, *, label: Callable[[Path], str]) -> list[_File]:
    """Every `*.toml` in `directory`, sorted, parsed (dot files are skipped: editors
    leave them)."""
    if not directory.exists():
        return []
    if not directory.is_dir():
        raise ConfigError(f"{label(directory)}: not a directory")
    files = []
    for path in sorted(directory.glob("*.toml")):
        if path.name.startswith(".") or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise ConfigError(f"{label(path)}: cannot read it: {reason}") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{label(path)}: not valid TOML: {exc}") from None
        files.append(_File(label(path), data))
    return files


def _build_all(
    files: list[_File], existing: Mapping[str, AgentDefinition], known_tools: Collection[str]
) -> list[tuple[_File, AgentDefinition]]:
    built: list[tuple[_File, AgentDefinition]] = []
    for file in files:
        base = existing.get(file.name) if isinstance(file.name, str) else None
        definition = _build(file, base, known_tools)
        for other, seen in built:
            if seen.name == definition.name:
                raise ConfigError(
                    f"{file.label}: name: {definition.name!r} is also defined by "
                    f"{other.label}; one file per agent type"
                )
        built.append((file, definition))
    return built


def _build(
    file: _File, base: AgentDefinition | None, known_tools: Collection[str]
) -> AgentDefinition:
    """`file`'s keys over `base` (its other fields kept), validated. The known tools are
    checked only when the file sets `tools`: a built-in's are not the file's fault."""
    merged = {**(base.model_dump() if base else {}), **file.data, "name": file.name}
    context = {"known_tools": known_tools} if "tools" in file.data else {}
    try:
        return AgentDefinition.model_validate(merged, context=context)
    except ValidationError as exc:
        problems = "; ".join(_problem(err, file) for err in exc.errors())
        raise ConfigError(f"{file.label}: {problems}") from None


_FIELDS = ", ".join(AgentDefinition.model_fields)


def _problem(err: Any, file: _File) -> str:
    where = ".".join(str(part) for part in err["loc"]) or "(top level)"
    message = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        message = f"unknown key; the keys are {_FIELDS}"
    elif where == "name" and "name" not in file.data:
        message += " (the name is the file's name unless the file sets name)"
    return f"{where}: {message}"


# --- project trust ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Widening:
    file: _File
    definition: AgentDefinition
    items: dict[str, Any]  # field -> the project's value, for the fingerprint
    base: AgentDefinition | None

    def describe(self) -> str:
        return f"{self.file.label}: " + "; ".join(
            _describe(field, self.definition, self.base) for field in self.items
        )


def _widening(new: AgentDefinition, base: AgentDefinition | None) -> dict[str, Any]:
    """The settings of a project definition that need trust, with their values: the
    ones that would let it do more than `base` (or, for a new role, more than reading)."""
    items: dict[str, Any] = {}
    if base is None:
        if not new.read_only:
            items["tools"] = sorted(new.tools)
        if new.may_delegate:
            items["may_delegate"] = True
        if new.model is not None:
            items["model"] = new.model
        old_rules: tuple[str, ...] = ()
    else:
        if not set(new.tools) <= set(base.tools):
            items["tools"] = sorted(new.tools)
        for limit in ("max_rounds", "max_continues", "retries"):
            if getattr(new, limit) > getattr(base, limit):
                items[limit] = getattr(new, limit)
        if new.may_delegate and not base.may_delegate:
            items["may_delegate"] = True
        if new.model != base.model:
            items["model"] = new.model
        if _RESUME_RANK[new.resume] > _RESUME_RANK[base.resume]:
            items["resume"] = new.resume
        old_rules = base.allow
    return items | _wider_lists(new, base, old_rules)


def _wider_lists(
    new: AgentDefinition, base: AgentDefinition | None, old_rules: tuple[str, ...]
) -> dict[str, Any]:
    """The list settings that widen: commands run unasked, beyond those the user's own
    definition already runs, and permission rules other than denials (a deny rule only
    takes away; anything else may override a deny of the user's)."""
    items: dict[str, Any] = {}
    commands = sorted(set(new.verify) - set(base.verify if base else ()))
    if commands:
        items["verify"] = commands
    rules = sorted(rule for rule in set(new.allow) - set(old_rules) if not _denies(rule))
    if rules:
        items["allow"] = rules
    return items


def _denies(rule: str) -> bool:
    return parse_rules([rule])[0].decision == "deny"


def _describe(field: str, new: AgentDefinition, base: AgentDefinition | None) -> str:
    """`field: what widens`, in the words of the TOML file."""
    value = _shown(getattr(new, field))
    match field:
        case "tools" if base is None:
            detail = f"{', '.join(new.tools)} (a new agent type may only read)"
        case "tools":
            detail = "adds " + ", ".join(t for t in new.tools if base and t not in base.tools)
        case "allow":
            old = base.allow if base else ()
            detail = ", ".join(_shown(r) for r in new.allow if r not in old and not _denies(r))
        case "verify":
            detail = f"{value} (commands run in the workspace when a task completes)"
        case "model" if base is None or base.model is None:
            detail = f"{value} (instead of the config's model for this role)"
        case _ if base is not None:
            detail = f"{value} (was {_shown(getattr(base, field))})"
        case _:
            detail = value
    return f"{field}: {detail}"


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return orjson.dumps(list(value)).decode()
    return orjson.dumps(value).decode() if isinstance(value, str) else str(value)


def _require_trust(
    project_dir: Path,
    wider: list[_Widening],
    *,
    trust: TrustStore | None,
    ask: Callable[[str], bool] | None,
    user_dir: Path | None,
) -> None:
    """Return when the user trusts the project with these settings (remembered, or
    answered yes now); raise `ConfigError` otherwise."""
    wanted = fingerprint({"agents": {w.definition.name: w.items for w in wider}})
    if trust is not None and trust.is_trusted(project_dir, wanted):
        return
    project = project_dir.resolve()
    listing = "\n".join(w.describe() for w in wider)
    if ask is not None:
        question = (
            f"The project {project} has agent definitions that ask for more than a "
            f"repository may set on its own:\n{_indent(listing)}\n"
            "Trust this project with these settings? (You are asked again if they change.)"
        )
        if ask(question):
            if trust is not None:
                trust.trust(project_dir, wanted)
            return
    where = f"{user_dir / 'agents'}/" if user_dir is not None else "agents/ in your config dir"
    said = "you did not trust" if ask is not None else "you have not trusted"
    raise ConfigError(
        f"{listing}\nA project file may only narrow an agent definition until you trust the "
        f"project, and {said} {project} with these settings. To use them, run orchestrator "
        "in the project interactively once and answer yes, or copy the definition into "
        f"{where} (your own definitions need no trust); or remove these settings from the "
        "project's files."
    )


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())
