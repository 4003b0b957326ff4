"""The settings a session runs with: what can be written as data (verification commands,
budgets, limits, serial mode, permission rules, ...), whoever chose them (a flag, the
config, the demo, a library caller). They are one journal record at the session's start,
`settings`, and `resume` runs with them unless its caller overrides them explicitly, which
is journaled too: a session killed at any instant goes on with the settings it started
with, whichever command or program continues it."""

from typing import Literal

import msgspec

from orchestrator.eventbase import EventBase
from orchestrator.messages import Value
from orchestrator.state.mailbox import DELIVERY_CHARS, MESSAGE_CHARS


class SessionSettings(
    Value, frozen=True, omit_defaults=False, kw_only=True, forbid_unknown_fields=True
):
    """The data part of a session's settings. Every field is written to the journal, its
    defaults included, so a later release's defaults never change a running session."""

    # How turn ends are assessed ([session] in the config; docs/assessment.md).
    verify: tuple[str, ...] = ()
    serial: bool = False
    max_auto_continues: int = 10
    stall_rounds: int = 6
    continuation_note: str = ""
    budget_rounds: int | None = None
    budget_tokens: int | None = None
    budget_cost: float | None = None
    budget_wall: float | None = None
    # One turn of an agent, and the model's sampling.
    max_rounds: int = 50
    max_tokens: int | None = None
    temperature: float | None = None
    # Delegation ([team] in the config; docs/tasks.md).
    max_depth: int = 2
    max_live: int = 8
    max_model_calls: int = 16
    wait_timeout: float = 600.0
    stall_after: float = 900.0
    park_limit: float = 600.0  # a parked task nobody answers this long blocks; 0: no limit
    message_chars: int = MESSAGE_CHARS
    delivery_chars: int = DELIVERY_CHARS
    # Calls in the background ([tools] in the config; docs/tools.md): how many may run at
    # once per agent and per session, the bytes of each one's output kept on disk, the
    # seconds one may run before it is cancelled, and after how many seconds a foreground
    # shell call moves to the background by itself (None: never).
    background_per_agent: int = 4
    background_per_session: int = 16
    background_output: int = 10 * 1024 * 1024
    background_deadline: float = 1800.0
    background_after: float | None = None
    # Permission rules (`--allow`), after the policy's own.
    allow: tuple[str, ...] = ()
    # Compaction ([compaction] in the config; docs/compaction.md).
    compact_at: float = 0.8  # share of the usable input that triggers it
    anchor_share: float = 0.25  # of the usable input, for the anchors
    keep_recent: int = 8_000  # tokens of the last turns kept verbatim
    keep_outputs: int = 20_000  # tokens of the newest tool outputs pruning keeps
    min_freed: float = 0.2  # a compaction freeing less is ineffective (the breaker)
    # Plan first: a planner writes a plan, which is decided on before a builder carries
    # it out (`run --plan`, `plan`; docs/plans.md). Journaled with the session's start,
    # so a session killed before its planner began still plans when resumed.
    plan: bool = False
    # Where delegated tasks run (`--engine`, `--database-url`, [engine] in the config;
    # docs/engine.md): the engine, and the dbos engine's database as a URL whose password
    # is hidden (`***`: never journaled; a resume is given it again), "" for the SQLite
    # file in the session's directory. So a resume runs on the engine the session chose.
    engine: Literal["local", "dbos"] = "local"
    engine_database: str = ""
    # dbos: its delegated tasks run on `orchestrator worker` processes (`--workers`).
    engine_workers: bool = False
    # The shell's sandbox (`--sandbox`, `--network`, [shell] sandbox and network;
    # docs/security.md), so a resume runs its commands as confined as the session chose,
    # whatever the config says then; a resume loosens them only when told to by a flag.
    # None: not journaled (a session of format 10 or older), the resume's config then.
    sandbox: Literal["off", "workspace", "strict"] | None = None
    network: bool | None = None
    # A plan's approval given in advance (`--approve`; docs/plans.md): "" none (a person
    # decides each version); "seen" the versions up to `approve_through` (those there
    # were when it was given, else the first) and any later one that adds no task and no
    # command to them; "all" every version (`--approve all`).
    approve: Literal["", "seen", "all"] = ""
    approve_through: int = 0

    def but(self, **changes: object) -> "SessionSettings":
        """These settings with `changes` (field names) instead."""
        return msgspec.structs.replace(self, **changes)


class SettingsChosen(EventBase, frozen=True, tag="settings"):
    """Record: the settings the session runs with from here on. `source` says who chose
    them: `run`, `demo`, `library` (`create_session(settings=...)`), `start` (the first
    `drive` of a session made without), `override` (a resume's own), `migrated`."""

    settings: SessionSettings
    source: str = ""


SettingsRecords = SettingsChosen
"""The settings' records (see `Record` in state/events.py)."""
