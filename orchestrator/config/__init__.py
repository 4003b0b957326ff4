"""The configuration file: providers, which model each agent role uses, prices, context
windows, the requests and tokens a minute a model may be sent (`[limits]`), the limits
of delegation (`[team]`) and of one session (`[session]`), and when and how an agent's
context is compacted (`[compaction]`), and how the live view draws (`[view]`).

A TOML file (see docs/configuration.md and docs/providers.md). It never holds an API
key, only the *name* of the environment variable that does. Loading takes a path:
finding the files (platformdirs, `--config`, environment, the project) and layering
them is the CLI's business (`cli_env.effective_config`, `settings.py`).

```toml
model = "anthropic:claude-sonnet-4-5"        # every agent, unless its role says otherwise

[agents.planner]
model = "openai:gpt-4.1"

[providers.openrouter]                        # a named OpenAI-compatible provider
kind = "openai"
base_url = "https://openrouter.ai/api/v1"
api_key_env = "OPENROUTER_API_KEY"

[prices."anthropic:claude-sonnet-4-5"]       # dollars per million tokens
input = 3.0
output = 15.0
cache_read = 0.3
cache_write = 3.75

[windows."openai-compatible:qwen2.5-coder"]  # tokens: the whole window, and the output
context = 32768
output = 8192
```
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from orchestrator.config.features import (
    HookConfig,
    HookEventName,
    McpConfig,
    McpServerConfig,
    TelemetryConfig,
)
from orchestrator.config.tables import (
    COUNT,
    DAY,
    TOKENS,
    YEAR,
    AgentConfig,
    CompactionConfig,
    EngineConfig,
    LimitConfig,
    ModelSpec,
    PlanConfig,
    ProviderConfig,
    ProviderKind,
    SessionConfig,
    ShellConfig,
    TeamConfig,
    ToolsConfig,
    ViewConfig,
    WindowConfig,
    _Strict,
)
from orchestrator.errors import ConfigError
from orchestrator.prices.cost import Price

__all__ = [
    "COUNT",
    "DAY",
    "TOKENS",
    "YEAR",
    "AgentConfig",
    "CompactionConfig",
    "Config",
    "EngineConfig",
    "HookConfig",
    "HookEventName",
    "LimitConfig",
    "McpConfig",
    "McpServerConfig",
    "ModelSpec",
    "PlanConfig",
    "ProviderConfig",
    "ProviderKind",
    "SessionConfig",
    "ShellConfig",
    "TeamConfig",
    "TelemetryConfig",
    "ToolsConfig",
    "ViewConfig",
    "WindowConfig",
    "load_config",
    "parse_config",
    "problems",
    "read_config_data",
    "validate_config",
]


class Config(_Strict, frozen=True):
    model: ModelSpec | None = None  # a list: a fallback chain (docs/providers.md)
    shell: ShellConfig = Field(default_factory=ShellConfig)
    team: TeamConfig = Field(default_factory=TeamConfig)
    session: SessionConfig = Field(default_factory=SessionConfig)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    plan: PlanConfig = Field(default_factory=PlanConfig)
    view: ViewConfig = Field(default_factory=ViewConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    hooks: tuple[HookConfig, ...] = ()  # `[[hooks]]`, run in order (docs/hooks.md)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    prices: dict[str, Price] = Field(default_factory=dict)
    windows: dict[str, WindowConfig] = Field(default_factory=dict)
    limits: dict[str, LimitConfig] = Field(default_factory=dict)

    def provider(self, name: str) -> ProviderConfig:
        return self.providers.get(name) or ProviderConfig()

    def agent(self, role: str) -> AgentConfig:
        return self.agents.get(role) or AgentConfig()

    def window(self, spec: str) -> WindowConfig | None:
        """The `[windows]` entry of model `spec` ("openai:gpt-4o"): by the full spec,
        else by the model alone ("gpt-4o"), as `[prices]` is read; None if neither is
        set. `models.windows.window_for` falls back on the known models."""
        if spec in self.windows:
            return self.windows[spec]
        _, sep, bare = spec.partition(":")
        return self.windows.get(bare) if sep else None

    def limit(self, spec: str) -> LimitConfig | None:
        """The `[limits]` entry of model `spec`, looked up as `window` looks up
        `[windows]`: by the full spec, else by the model alone; None if neither is set."""
        if spec in self.limits:
            return self.limits[spec]
        _, sep, bare = spec.partition(":")
        return self.limits.get(bare) if sep else None

    def model_for(
        self,
        role: str,
        *,
        cli_model: str | None = None,
        cli_roles: Mapping[str, str] | None = None,
    ) -> str | None:
        """The model spec for an agent role. The command line wins over the file; a
        role's own setting wins over the general one:
        `cli_roles[role]` > `cli_model` > `[agents.ROLE] model` > `model`."""
        if cli_roles and role in cli_roles:
            return cli_roles[role]
        return cli_model or self.agent(role).model or self.model


def parse_config(text: str, *, source: str = "config") -> Config:
    return validate_config(_toml(text, source), source=source)


def validate_config(data: Mapping[str, Any], *, source: str) -> Config:
    """`data` (a parsed TOML document) as a `Config`; every problem named by `source`
    and the key's dotted path."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(problems(exc, source=source)) from None


def problems(exc: ValidationError, *, source: str, model: type[BaseModel] | None = None) -> str:
    """Each error of `exc` as `SOURCE: dotted.key: what is wrong`, one a line; a number
    out of its range names the range (`at least 1, at most 10000`), read from `model`'s
    fields (the model validated: `Config` unless said otherwise)."""
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        line = f"{source}: {key}: {err['msg']}"
        accepted = _accepted(model or Config, err["loc"])
        if accepted and err["type"] in _RANGE_ERRORS:
            line += f" (accepted: {accepted}; got {err['input']!r})"
        lines.append(line)
    return "\n".join(lines)


_RANGE_ERRORS = frozenset(
    {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number"}
)


def _accepted(model: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """The range a numeric field accepts, in words ("" when `loc` names none): follows
    `loc` through nested models and past the keys of tables (`providers.NAME`)."""
    node: type[BaseModel] | None = model
    info = None
    table = False  # the next part is a key of a table of models
    for part in loc:
        if table:
            table = False
            continue
        if node is None:
            return ""
        info = node.model_fields.get(str(part))
        if info is None:
            return ""
        node, table = _inner(info.annotation)
    if info is None:
        return ""
    low = high = ""
    for rule in info.metadata:
        for name, words in (("ge", "at least"), ("gt", "more than")):
            if (bound := getattr(rule, name, None)) is not None:
                low = f"{words} {_number(bound)}"
        for name, words in (("le", "at most"), ("lt", "less than")):
            if (bound := getattr(rule, name, None)) is not None:
                high = f"{words} {_number(bound)}"
    return ", ".join(part for part in (low, high) if part)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _inner(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model a field holds, and whether as the values of a table (else None)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    for arg in getattr(annotation, "__args__", ()):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg, True
    return None, False


def read_config_data(
    path: Path, *, missing_ok: bool = True, source: str | None = None
) -> dict[str, Any] | None:
    """The parsed TOML of the config file at `path`, unvalidated; None if it does not
    exist and `missing_ok` (use false for a path the user gave explicitly)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if missing_ok:
            return None
        raise ConfigError(f"config file {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{source or path}: not UTF-8 text") from None
    return _toml(text, source or str(path))


def load_config(path: Path, *, missing_ok: bool = True) -> Config:
    """Read the config file at `path`; a missing file means defaults unless
    `missing_ok` is false (use that for a path the user gave explicitly)."""
    data = read_config_data(path, missing_ok=missing_ok)
    return Config() if data is None else validate_config(data, source=str(path))


def _toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:  # arrays or inline tables nested past what the parser follows
        raise ConfigError(
            f"{source}: not readable: its arrays or tables are nested too deep"
        ) from None
