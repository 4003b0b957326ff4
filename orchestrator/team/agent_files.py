"""Agent definitions from TOML files, one definition per file, the file's stem its default
name, read in this order, each layer over the one before (a file naming an existing role
changes only the keys it sets):

1. the built-ins (definitions.py);
2. `<user config dir>/agents/*.toml`: the user's words, which may define or change
   anything;
3. `<project>/.orchestrator/agents/*.toml`: the repository's words. Until the user has
   trusted the project, these may only narrow (see `_widening`); anything wider is
   asked about once and remembered in the `TrustStore`, or refused.

docs/agents.md is the user's guide to all of this.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from orchestrator.errors import ConfigError
from orchestrator.stamps import ByStamps
from orchestrator.team.definitions import _RESUME_RANK, BUILTIN, AgentDefinition, Definitions
from orchestrator.team.trust import TRUST_FILE, TrustStore, fingerprint
from orchestrator.tools.permissions import parse_rules

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
        files = _read_dir(user_dir / "agents", label=lambda path: _shown_path(str(path)))
        apply(_build_all(files, definitions, known_tools))
    if project_dir is not None:
        files = _read_dir(
            project_dir / ".orchestrator" / "agents",
            label=lambda path: _shown_path(path.relative_to(project_dir).as_posix()),
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


def _shown_path(path: str) -> str:
    """A file's name as messages and the trust question show it: quoted, with escapes,
    when it holds a newline or any other character that does not print (a repository may
    name a file so as to add lines to the question)."""
    return path if path.isprintable() else repr(path)


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


# --- read once, again when changed ------------------------------------------------------


def definition_files(project_dir: Path | None, user_dir: Path | None) -> list[Path]:
    """What `load_definitions` reads from disk: each agent file, the directories holding
    them (their times change when a file comes or goes) and the trusted projects' file."""
    dirs = [user_dir / "agents"] if user_dir is not None else []
    if project_dir is not None:
        dirs.append(project_dir / ".orchestrator" / "agents")
    paths = [*dirs, *([user_dir / TRUST_FILE] if user_dir is not None else [])]
    for directory in dirs:
        if directory.is_dir():
            paths.extend(sorted(directory.glob("*.toml")))
    return paths


class DefinitionsCache:
    """The agent types of each project, loaded by `load` once and again only when a file
    they are read from changed (`definition_files`, `stamps.ByStamps`), or changed so
    recently that its stat may not show the next change: what a worker's tasks of one
    workspace share. Blocking (it reads the disk): from trio, call `get` in a thread
    (`known` needs none)."""

    def __init__(self, load: Callable[[Path], Definitions], user_dir: Path | None) -> None:
        self._load = load
        self._user_dir = user_dir
        self._found: ByStamps[Path, Definitions] = ByStamps()

    @property
    def loads(self) -> int:
        """How many times `load` ran."""
        return self._found.made

    def known(self, project_dir: Path) -> Definitions | None:
        """What `get` gives while none of the files changed since its last load, else
        None. It only looks at the files' stat (cheap enough for trio's thread)."""
        return self._found.look(project_dir, definition_files(project_dir, self._user_dir))[1]

    def get(self, project_dir: Path) -> Definitions:
        files = definition_files(project_dir, self._user_dir)
        return self._found.get(project_dir, files, lambda: self._load(project_dir))


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
        if new.max_live != base.max_live and (
            new.max_live is None or (base.max_live is not None and new.max_live > base.max_live)
        ):
            items["max_live"] = new.max_live
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
