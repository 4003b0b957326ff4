"""The tables of the config file that shape a run (`[providers.NAME]`, `[agents.ROLE]`,
`[shell]`, `[team]`, `[session]`, `[windows]`, `[limits]`, `[compaction]`, `[tools]`,
`[plan]`, `[view]`, `[engine]`), their bounds, and the strict base every table shares: a
misspelt key is an error. `Config` (config/__init__.py) gathers them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, Field, field_validator, model_validator

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
