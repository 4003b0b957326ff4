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

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from orchestrator.errors import ConfigError
from orchestrator.usage import Price

ProviderKind = Literal["openai", "openai-responses", "anthropic"]


def _chain(value: object) -> object:
    """A model given as a list (a fallback chain, models/fallback.py) as the one spec
    string the rest reads: its specs joined by commas."""
    if isinstance(value, list | tuple):
        specs = [str(v).strip() if isinstance(v, str) else v for v in value]
        if len(specs) < 2 or not all(isinstance(v, str) and v for v in specs):
            raise ValueError("a fallback chain is a list of two or more model specs")
        if any("," in v for v in specs):
            raise ValueError("a model spec in a chain holds no comma")
        return ",".join(specs)
    return value


ModelSpec = Annotated[str, BeforeValidator(_chain)]
"""A model spec, or a fallback chain given as a list of them."""


class _Strict(BaseModel, frozen=True, extra="forbid", allow_inf_nan=False):
    """A misspelt key is an error, not a silently ignored setting; so is `inf` or `nan`
    (TOML has both), which no setting means."""


# Upper bounds. Each is far above any use we know of, and keeps a value where the code
# and the journal handle it: integers well within 64 bits (the journal's JSON), seconds
# that trio's clock adds to its own time without losing the sub-second part. A value past
# one is refused before any session exists, naming the key and the range (`problems`).
DAY = 86_400.0
YEAR = 365 * DAY
COUNT = 10_000  # agents, calls, continuations: more is a runaway, not a plan
TOKENS = 1_000_000_000  # a model's window or output, characters of a message


class ProviderConfig(_Strict, frozen=True):
    """Settings of one provider, built-in (`openai`, `anthropic`, `ollama`,
    `openai-compatible`) or named by you (then `kind` is required)."""

    kind: ProviderKind | None = None
    base_url: str | None = None
    api_key_env: str | None = None  # "" sends no key at all
    headers: dict[str, str] = Field(default_factory=dict)  # not for secrets
    max_tokens: int | None = Field(default=None, gt=0, le=TOKENS)
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] | None = None
    thinking_budget: int | None = Field(default=None, ge=1024, le=TOKENS)
    connect_timeout: float | None = Field(default=None, gt=0, le=DAY)
    first_byte_timeout: float | None = Field(default=None, gt=0, le=DAY)
    idle_timeout: float | None = Field(default=None, gt=0, le=DAY)
    max_retries: int | None = Field(default=None, ge=0, le=100)
    # The most calls at once on this provider's endpoint (per key): lowered after a 429
    # or 529, raised back as calls go well (models/limits.py `Backoff`).
    concurrency: int | None = Field(default=None, ge=1, le=COUNT)
    # A key goes over plain http only to a loopback address, unless this says otherwise.
    allow_key_over_http: bool = False
    # Prompt caching: Anthropic breakpoints ("off" or "auto") and the shared prefix's
    # lifetime; for OpenAI-compatible servers, whether to send a prompt_cache_key.
    cache: Literal["off", "auto"] | None = None
    cache_ttl: Literal["5m", "1h"] | None = None
    prompt_cache_key: bool | None = None


class AgentConfig(_Strict, frozen=True):
    """Per agent role (`planner`, `builder`, `worker`, ...)."""

    model: ModelSpec | None = None  # a list: a fallback chain (docs/providers.md)
    # Seconds after its last move the role's fallback chain goes back to its first model.
    cooldown: float | None = Field(default=None, ge=0, le=DAY)
    max_tokens: int | None = Field(default=None, gt=0, le=TOKENS)
    temperature: float | None = Field(default=None, ge=0, le=2)
    # Prompt caching for this role's requests, as under [providers.NAME]; where set, it
    # wins over the provider's setting (see resolve_model's `role`).
    cache: Literal["off", "auto"] | None = None
    cache_ttl: Literal["5m", "1h"] | None = None
    prompt_cache_key: bool | None = None


class ShellConfig(_Strict, frozen=True):
    """`[shell]`: what the shell tool's commands inherit of the environment (see
    tools/environment.py and docs/configuration.md) and the sandbox they run in."""

    inherit: Literal["all", "core", "none"] = "all"
    keep_secrets: bool = False  # true: do not drop *KEY*, *SECRET*, *TOKEN*, *PASSWORD*
    exclude: tuple[str, ...] = ()
    include_only: tuple[str, ...] = ()
    set: dict[str, str] = Field(default_factory=dict)
    # The sandbox (tools/sandbox.py, docs/security.md): off, workspace or strict.
    sandbox: Literal["off", "workspace", "strict"] = "workspace"
    network: bool = False  # true: sandboxed commands reach the network
    # Of `.git` and `.venv`, read-only in the sandbox: those the main agent's commands may
    # write all the same (`git commit`, `pip install`); a subagent's never.
    writable: tuple[Literal[".git", ".venv"], ...] = ()
    sandbox_required: bool = False  # true: refuse to start where there is no sandbox
    sandbox_probe: Literal["auto", "unavailable"] = "auto"  # unavailable: as if none (tests)


class TeamConfig(_Strict, frozen=True):
    """`[team]`: the limits of delegation (see docs/tasks.md); unset keys keep their
    defaults."""

    max_depth: int | None = Field(default=None, ge=1, le=100)
    max_live: int | None = Field(default=None, ge=1, le=COUNT)
    max_model_calls: int | None = Field(default=None, ge=1, le=COUNT)
    wait_timeout: float | None = Field(default=None, gt=0, le=DAY)
    stall_after: float | None = Field(default=None, gt=0, le=YEAR)
    park_limit: float | None = Field(default=None, ge=0, le=YEAR)
    message_chars: int | None = Field(default=None, ge=200, le=TOKENS)
    delivery_chars: int | None = Field(default=None, ge=200, le=TOKENS)


class SessionConfig(_Strict, frozen=True):
    """`[session]`: how far one session may go on by itself, and how it checks its work.
    The values here are the defaults once every layer is applied."""

    # How often an agent whose turn ended with work left is sent back without asking.
    max_auto_continues: int = Field(default=10, ge=0, le=COUNT)
    # Text put before the generated continuation note; "" is the built-in note alone.
    continuation_note: str = ""
    # Shell commands run in the workspace to verify the work ("pytest -q").
    verify: tuple[str, ...] = ()
    # Each todo list is a queue: completing an item starts the next unblocked one.
    serial: bool = False
    # Rounds without progress before an agent counts as stalled.
    stall_rounds: int = Field(default=6, ge=1, le=COUNT)
    # Budgets of the whole session, every agent together; None is no limit.
    budget_rounds: int | None = Field(default=None, ge=1, le=TOKENS)  # model calls
    budget_tokens: int | None = Field(default=None, ge=1, le=10**15)
    budget_cost: float | None = Field(default=None, gt=0, le=1_000_000)  # US dollars
    budget_wall: float | None = Field(default=None, gt=0, le=YEAR)  # seconds of one run

    @field_validator("verify")
    @classmethod
    def _commands(cls, verify: tuple[str, ...]) -> tuple[str, ...]:
        if any(not command.strip() for command in verify):
            raise ValueError("a verify command must not be blank")
        return verify


class WindowConfig(_Strict, frozen=True):
    """`[windows."SPEC"]`: what a model accepts, in tokens: `context` in all, input and
    output together, of which it may write `output` (0: not known; the runtime then
    reserves what it asks for). The same value describes a known model in
    `models/windows.py`."""

    context: int = Field(gt=0, le=TOKENS)
    output: int = Field(default=0, ge=0, le=TOKENS)

    @model_validator(mode="after")
    def _output_fits(self) -> WindowConfig:
        if self.output >= self.context:
            raise ValueError(
                f"output ({self.output}) must be less than context ({self.context}): "
                "the window holds the input too"
            )
        return self


class LimitConfig(_Strict, frozen=True):
    """`[limits."SPEC"]`: the requests (`rpm`) and tokens (`tpm`, input and output) a
    minute a model may be sent on its endpoint, kept to by waiting rather than by a 429
    (models/limits.py `Rate`, docs/providers.md)."""

    rpm: int | None = Field(default=None, ge=1, le=TOKENS)
    tpm: int | None = Field(default=None, ge=1, le=TOKENS)

    @model_validator(mode="after")
    def _says_something(self) -> LimitConfig:
        if self.rpm is None and self.tpm is None:
            raise ValueError("a limit needs rpm (requests a minute), tpm (tokens a minute) or both")
        return self


class CompactionConfig(_Strict, frozen=True):
    """`[compaction]`: when an agent's context is compacted, and what a compaction keeps
    (docs/configuration.md). The values here are the defaults (those of
    `SessionSettings`, whose `compact_at` is `at` here and the rest of the same names)."""

    # The share of the model's usable input at which a context is compacted.
    at: float = Field(default=0.8, gt=0, lt=1)
    # The share of the usable input the anchors (goal, todos, tasks, mail, files) may fill.
    anchor_share: float = Field(default=0.25, gt=0, le=0.5)
    # Tokens of the last turns kept verbatim after a summary.
    keep_recent: int = Field(default=8_000, ge=0, le=TOKENS)
    # Tokens of the newest tool outputs pruning keeps whole.
    keep_outputs: int = Field(default=20_000, ge=0, le=TOKENS)
    # A compaction that frees less than this share of the context is ineffective (two in
    # a row pause the automatic trigger for a few rounds).
    min_freed: float = Field(default=0.2, ge=0, lt=1)


class ToolsConfig(_Strict, frozen=True):
    """`[tools]`: calls in the background (docs/tools.md); unset keys keep their
    defaults (journaled with each session as its settings)."""

    background_per_agent: int | None = Field(default=None, ge=1, le=COUNT)
    background_per_session: int | None = Field(default=None, ge=1, le=COUNT)
    background_output: int | None = Field(default=None, ge=1024, le=2**40)  # bytes on disk
    background_deadline: float | None = Field(default=None, gt=0, le=YEAR)  # seconds
    background_after: float | None = Field(default=None, gt=0, le=YEAR)  # seconds (unset: never)


class PlanConfig(_Strict, frozen=True):
    """`[plan]`: how big a plan may be and how often it may be re-planned
    (docs/plans.md#limits). The values here are the defaults, `loop.plan.PlanLimits`'s
    (this module is below `loop/`: a test keeps the two the same)."""

    max_tasks: int = Field(default=200, ge=1, le=COUNT)
    max_bytes: int = Field(default=256 * 1024, ge=1024, le=64 * 1024 * 1024)
    max_replans_per_task: int = Field(default=3, ge=0, le=100)
    max_replans: int = Field(default=10, ge=0, le=1000)


class ViewConfig(_Strict, frozen=True):
    """`[view]`: the live view at a terminal (docs/live-view.md)."""

    # Frames a second at most (`--fps` wins); `cli.options.FPS_RANGE` is the same range.
    fps: float = Field(default=10.0, ge=1, le=60)


class EngineConfig(_Strict, frozen=True):
    """`[engine]`: where delegated tasks run (docs/engine.md); `--engine` wins over
    `kind`. `database_url` is the dbos engine's database (`sqlite:///PATH` or
    `postgresql://...`); None: a SQLite file in the session's directory. `patience`:
    the seconds the engine waits for that database while it cannot be reached."""

    kind: Literal["local", "dbos"] = "local"
    database_url: str | None = None
    patience: float = Field(default=600.0, gt=0, le=YEAR)
    # dbos: delegated tasks run on `orchestrator worker` processes, not the session's.
    workers: bool = False


class McpServerConfig(_Strict, frozen=True):
    """`[mcp.servers.NAME]`: one MCP server whose tools the session's agents may use
    (docs/mcp.md): a command run over stdio (`command`, `args`, `env`, `cwd`) or a
    streamable HTTP endpoint (`url`, `headers`). A value of `env` or `headers` written
    `env:NAME` is the environment variable NAME's value, read when the server starts and
    redacted like a provider's key. `tools`: globs of the server's tools the session takes
    (none: all); `timeout`: seconds a call (and the start) may take; `max_output`: the
    characters of a result past which it is refused as oversized."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    tools: tuple[str, ...] = ()
    timeout: float = Field(default=60.0, gt=0, le=DAY)
    max_output: int = Field(default=100_000, ge=100, le=TOKENS)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "give either command (a server run over stdio) or url (streamable HTTP), "
                "not both and not neither"
            )
        stdio_only = [k for k in ("args", "env", "cwd") if k in self.model_fields_set]
        if self.url is not None and stdio_only:
            raise ValueError(f"{', '.join(stdio_only)}: only for a command (stdio) server")
        if self.command is not None and "headers" in self.model_fields_set:
            raise ValueError("headers: only for a url (streamable HTTP) server")
        if self.command is not None and not self.command.strip():
            raise ValueError("command must not be blank")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url {self.url!r} is not an http:// or https:// address")
        for key, value in (*self.env.items(), *self.headers.items()):
            if value.startswith("env:") and not value[4:].strip():
                raise ValueError(f"{key} = {value!r} names no environment variable")
        return self


class McpConfig(_Strict, frozen=True):
    """`[mcp]`: the MCP servers (`[mcp.servers.NAME]`); docs/mcp.md."""

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)

    @field_validator("servers")
    @classmethod
    def _names(cls, servers: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in servers:
            if not _MCP_NAME.fullmatch(name) or "__" in name:
                raise ValueError(
                    f"{name!r} is not a server name (letters, digits, '_' and '-', up to 32, "
                    "no '__': a tool is shown to the model as SERVER__TOOL)"
                )
        return servers


_MCP_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")

HookEventName = Literal[
    "session_start",
    "session_end",
    "user_message",
    "pre_tool",
    "post_tool",
    "task_delegated",
    "task_settled",
    "pre_compact",
    "post_compact",
    "stop",
    "waiting",
]
"""When a hook runs (docs/hooks.md)."""


class HookConfig(_Strict, frozen=True):
    """One `[[hooks]]` entry: a command run at `event` (docs/hooks.md), given the event as
    JSON on stdin; `tools` and `roles` (globs; empty: every one) narrow when it runs."""

    event: HookEventName
    command: str
    tools: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    timeout: float = Field(default=30.0, gt=0, le=DAY)
    fail_closed: bool = False  # a `pre_tool` hook that fails or times out refuses the call

    @model_validator(mode="after")
    def _sound(self) -> HookConfig:
        if not self.command.strip():
            raise ValueError("command must not be blank")
        if self.fail_closed and self.event != "pre_tool":
            raise ValueError("fail_closed: only for a pre_tool hook")
        return self


class TelemetryConfig(_Strict, frozen=True):
    """`[telemetry]`: OpenTelemetry traces and metrics of each session (docs/tracing.md),
    exported over OTLP/HTTP with the `otel` extra installed. `enabled` turns them on (as
    does `OTEL_TRACES_EXPORTER=otlp`; `OTEL_SDK_DISABLED=true` turns them off); `endpoint`
    is the collector's base URL (empty: the `OTEL_EXPORTER_OTLP_*` variables', else
    http://localhost:4318); `capture_content`: tool calls' arguments and results on their
    spans, redacted; `metrics`: tokens, cost and tool latency as metrics too."""

    enabled: bool = False
    endpoint: str = ""
    capture_content: bool = False
    metrics: bool = True


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
