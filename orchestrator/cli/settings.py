"""Layered configuration: several config files and the command line's flags made into
one `Config`, with where each setting came from.

Layers are applied in order, each over the ones before, key by key: tables merge, a
later layer's key wins, an array replaces the one below it whole. Every layer is
validated on its own first, so a problem names the file (or flag) and the key.

One layer may be the *project's* (`<workspace>/.orchestrator/config.toml`): the
repository's words, not the user's. Until the user trusts the project with them (a
`TrustStore` fingerprint named `{"config": ...}` over exactly those settings), its
settings may only narrow what the layers below allow (`_narrows`); any other is asked
about once (`ask`) and remembered, refused with a `ConfigError`, or, for a report,
left out and listed in `Layered.ignored`.

No environment, no platformdirs: the CLI (`cli_env.effective_config`) finds the files.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Literal

import msgspec
import orjson
from pydantic import ValidationError

from orchestrator.config import (
    Config,
    PlanConfig,
    TeamConfig,
    ToolsConfig,
    problems,
    validate_config,
)
from orchestrator.errors import ConfigError
from orchestrator.loop.plan import PlanLimits
from orchestrator.state.settings import SessionSettings
from orchestrator.team.trust import TrustStore, fingerprint

DEFAULT: Final = "default"
"""The source of a setting no layer sets."""
UNTRUSTED: Final = "project not trusted"
"""Why a project setting is in `Layered.ignored`."""

Key = tuple[str, ...]
Leaves = dict[Key, Any]


class Layer(msgspec.Struct, frozen=True):
    """One source of settings: `label` says which ("user config /path", "command line
    --serial") in errors and provenance; `data` is its TOML document (or the flags'
    values in the same shape), unvalidated."""

    label: str
    data: Mapping[str, Any]
    path: Path | None = None
    project: bool = False  # the project's config: what widens needs the user's trust


class Project(msgspec.Struct, frozen=True):
    """Whose trust a project layer needs: the workspace `directory`, the user's
    `trust` store, and `ask` (None: nobody to ask)."""

    directory: Path
    trust: TrustStore | None
    ask: Callable[[str], bool] | None = None
    own_config: Path | None = None  # where the user's own config lives, for the advice


class Layered(msgspec.Struct, frozen=True):
    config: Config
    sources: dict[str, str]
    """Every effective leaf key (`session.verify`, `prices."gpt-4.1".input`) and the
    layer that set it, or `DEFAULT`."""
    ignored: dict[str, tuple[Any, str]] = msgspec.field(default_factory=dict)
    """Project settings left out, untrusted: key -> (its value, the layer's label)."""


TEAM_DEFAULTS: Final[Mapping[str, Any]] = MappingProxyType(
    {name: getattr(SessionSettings(), name) for name in TeamConfig.model_fields}
)
"""What an unset `[team]` key means: the session settings' default of that name."""

TOOLS_DEFAULTS: Final[Mapping[str, Any]] = MappingProxyType(
    {name: getattr(SessionSettings(), name) for name in ToolsConfig.model_fields}
)
"""What an unset `[tools]` key means, as for `[team]`."""

_SESSION_TABLES: Final[Mapping[str, Mapping[str, Any]]] = MappingProxyType(
    {"team": TEAM_DEFAULTS, "tools": TOOLS_DEFAULTS}
)


def layered(
    layers: Sequence[Layer],
    *,
    project: Project | None = None,
    untrusted: Literal["refuse", "ignore"] = "refuse",
) -> Layered:
    """`layers` applied in order over the defaults. A project layer's settings that need
    trust are applied when `project.trust` has them or `project.ask` says yes (then
    remembered); otherwise they are refused (`ConfigError`) or, with
    `untrusted="ignore"`, left out and listed in `Layered.ignored`."""
    merged: Leaves = {}
    sources: dict[Key, str] = {}
    ignored: dict[str, tuple[Any, str]] = {}
    for index, layer in enumerate(layers):
        own = _own(layer, merged)
        if layer.project:
            later = {key for above in layers[index + 1 :] for key in _leaves(above.data)}
            wider = {k: v for k, v in own.items() if k not in later and not _narrows(k, v, merged)}
            if wider:
                if project is None:
                    raise AssertionError("a project layer needs a Project")
                if not _trusted(layer, wider, merged, project, refuse=untrusted == "refuse"):
                    ignored.update({dotted(k): (v, layer.label) for k, v in wider.items()})
                    own = {k: v for k, v in own.items() if k not in wider}
        merged.update(own)
        sources.update(dict.fromkeys(own, layer.label))
    config = validate_config(_tree(merged), source="the config files together")
    provenance = {dotted(k): DEFAULT for k in _DEFAULT_LEAVES}
    provenance.update({dotted(k): label for k, label in sources.items()})
    return Layered(config, provenance, ignored)


def dotted(key: Key) -> str:
    """`key` as TOML writes it: `session.verify`, `prices."openai:gpt-4.1".input`."""
    return ".".join(part if _BARE.fullmatch(part) else _quoted(part) for part in key)


def effective_values(config: Config) -> dict[str, Any]:
    """Every leaf of `config` by its dotted key, as JSON values (an unset `[team]` key
    as its default)."""
    values = {dotted(k): v for k, v in _leaves(config.model_dump(mode="json")).items()}
    for table, defaults in _SESSION_TABLES.items():
        for name, default in defaults.items():
            if values.get(f"{table}.{name}") is None:
                values[f"{table}.{name}"] = default
    return values


_BARE: Final = re.compile(r"[A-Za-z0-9_-]+")


def _own(layer: Layer, below: Leaves) -> Leaves:
    """The keys `layer` sets, validated, in canonical form (`1` -> `1.0` for a float,
    tuples as lists) so that layers compare and fingerprint alike. A layer need not be
    whole on its own: a table's required key may come from a layer below (a price's
    `input` from the user's config, its `output` from --config)."""
    try:
        Config.model_validate(layer.data)
    except ValidationError as exc:
        if any(err["type"] != "missing" for err in exc.errors()):
            raise ConfigError(problems(exc, source=layer.label)) from None
    raw = _leaves(layer.data)
    together = validate_config(_tree({**below, **raw}), source=layer.label)
    canonical = _leaves(together.model_dump(mode="json", exclude_unset=True))
    return {key: canonical.get(key, value) for key, value in raw.items()}


def _leaves(tree: Mapping[str, Any], prefix: Key = ()) -> Leaves:
    """Every value of `tree` that is not a table, by its path (arrays are leaves)."""
    out: Leaves = {}
    for name, value in tree.items():
        if isinstance(value, Mapping):
            out.update(_leaves(value, (*prefix, name)))
        else:
            out[(*prefix, name)] = value
    return out


def _tree(leaves: Leaves) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, value in leaves.items():
        node = tree
        for part in key[:-1]:
            node = node.setdefault(part, {})
        node[key[-1]] = value
    return tree


_DEFAULT_LEAVES: Final = _leaves(Config().model_dump(mode="json"))


# --- what a project may set on its own ---------------------------------------------------

_LOWER_IS_NARROWER: Final = frozenset(
    {
        ("session", "max_auto_continues"),
        ("session", "stall_rounds"),
        *(("team", name) for name in TEAM_DEFAULTS),
        *(("tools", name) for name in TOOLS_DEFAULTS if name != "background_after"),
        *(("plan", name) for name in PlanConfig.model_fields),
    }
)
_BUDGETS: Final = frozenset(
    ("session", name) for name in ("budget_rounds", "budget_tokens", "budget_cost", "budget_wall")
)


def _below(key: Key, merged: Leaves) -> Any:
    """The value of `key` that the layers applied so far give (or the default)."""
    if key in merged:
        return merged[key]
    if key[0] in _SESSION_TABLES and len(key) == 2:
        return _SESSION_TABLES[key[0]].get(key[1])
    return _DEFAULT_LEAVES.get(key)


def _narrows(key: Key, value: Any, merged: Leaves) -> bool:
    """Whether a project may set `key` to `value` without trust: it lets nothing run
    that the layers below do not, and no more of anything."""
    base = _below(key, merged)
    if value == base:
        return True  # no change at all
    if key in _LOWER_IS_NARROWER or key in _BUDGETS:
        return base is None or (value is not None and value <= base)
    match key:
        case ("session", "serial"):
            return value is True
        case ("session", "continuation_note") | ("view", "fps") | ("tools", "background_after"):
            return True
        case ("session", "verify"):
            return set(value) <= set(base or ())
        case ("shell", "sandbox"):
            from orchestrator.tools.sandbox import LEVELS  # (loosest first)

            return value in LEVELS and LEVELS.index(value) >= LEVELS.index(base or "workspace")
        case ("shell", "network"):
            return value is False
        case ("shell", "sandbox_required"):
            return value is True
        case ("shell", "writable"):
            return set(value) <= set(base or ())
    # A model, a provider, prices, the shell's environment, anything else: only with trust.
    return False


def _trusted(
    layer: Layer, wider: Leaves, merged: Leaves, project: Project, *, refuse: bool
) -> bool:
    """Whether the user trusts the project with `wider`: remembered, or asked now. The
    scripts in the project that its `[[hooks]]` and its MCP servers run are part of what
    is trusted: a change to one asks again."""
    ran = _hook_scripts(wider.get(("hooks",)), project.directory)
    ran.update(_server_scripts(wider, merged, project.directory))
    config = {"config": {dotted(k): v for k, v in wider.items()}}
    wanted = fingerprint({**config, "scripts": ran} if ran else config)
    if project.trust is not None and project.trust.is_trusted(project.directory, wanted):
        return True
    if not refuse:
        return False
    where = project.directory.resolve()
    listing = "\n".join(_describe(k, v, merged) for k, v in wider.items())
    if project.ask is not None:
        question = (
            f"The project {where} has a config file ({layer.path or layer.label}) that "
            f"asks for more than a repository may set on its own:\n{_indent(listing)}\n"
            "Trust this project with these settings? (You are asked again if they change.)"
        )
        if project.ask(question):
            if project.trust is not None:
                project.trust.trust(project.directory, wanted)
            return True
    own = f"your own config ({project.own_config})" if project.own_config else "your own config"
    said = "you did not trust" if project.ask is not None else "you have not trusted"
    raise ConfigError(
        f"{layer.label}:\n{_indent(listing)}\nA project config may only narrow the settings "
        f"until you trust the project, and {said} {where} with these settings. To use "
        "them, run orchestrator in the project once at a terminal (without --yes or --json) "
        "and answer yes, or put "
        f"them in {own}, which needs no trust; or remove them from the project's file."
    )


def _hook_scripts(hooks: Any, directory: Path) -> dict[str, str]:
    """The files in the project its hooks' commands run, with their content's digests."""
    from orchestrator.tools.scripts import scripts  # (a project that widens: the tools')

    if not isinstance(hooks, list):
        return {}
    commands = [h.get("command") for h in hooks if isinstance(h, Mapping)]
    ran: dict[str, str] = {}
    for command in commands:
        if isinstance(command, str):
            ran.update(scripts(command, directory))
    return ran


def _server_scripts(wider: Leaves, merged: Leaves, directory: Path) -> dict[str, str]:
    """The files in the project its MCP servers' command lines run (`[mcp.servers.NAME]`
    `command` and `args`, set by the project or below it), with their content's digests."""
    from orchestrator.tools.scripts import scripts  # (a project that widens: the tools')

    ran: dict[str, str] = {}
    for name in sorted({key[2] for key in wider if key[:2] == ("mcp", "servers") and len(key) > 3}):
        command = wider.get(("mcp", "servers", name, "command"))
        command = command or merged.get(("mcp", "servers", name, "command"))
        args = wider.get(("mcp", "servers", name, "args"))
        args = args or merged.get(("mcp", "servers", name, "args")) or []
        if isinstance(command, str) and isinstance(args, list):
            ran.update(scripts(shlex.join([command, *map(str, args)]), directory))
    return ran


def _describe(key: Key, value: Any, merged: Leaves) -> str:
    base = _below(key, merged)
    text = f"{dotted(key)}: {shown(value)}"
    if key == ("session", "verify"):
        return f"{text} (commands run in the workspace without asking)"
    if key == ("hooks",):
        return f"{text} (run as your commands, outside the sandbox, with the scripts they run)"
    if key[:2] == ("mcp", "servers") and key[3:] == ("command",):
        return f"{text} (an MCP server run as your command, outside the sandbox, with its scripts)"
    return text if base is None else f"{text} (was {shown(base)})"


def shown(value: Any) -> str:
    """A value as a person reads it in TOML (`none` for an unset one)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | list | tuple):
        return orjson.dumps(value).decode()
    return str(value)


def _quoted(part: str) -> str:
    return orjson.dumps(part).decode()


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())


def plan_limits(config: Config) -> PlanLimits:
    """The `[plan]` table as the plan rules take it."""
    return PlanLimits(**config.plan.model_dump())
