"""When an agent's context must be compacted, and whether a summary will do: pure
judgement over values the runtime hands in. The first part of compaction (issue 21): the
runtime that acts on it, its records and the anchors are not built yet, so nothing calls
this module so far.

- `Window`: what a model accepts (its context window less the output it may write and a
  margin), from config, a table of known models, or a context-too-long error.
- `Count`: an agent's context size in tokens: the provider's last reported input count,
  and an estimate of what was added since, calibrated on the provider's own counts.
- `Breaker`: compactions that failed or freed too little, in a row, pause the fraction
  trigger for some rounds (never the one a context-too-long error pulls).
- `due`: whether to compact now, and why.
- `SECTIONS`, `missing_sections`: what a model's summary must hold, checked.
- `fallback_summary`: the same sections built from facts alone, when the model's summary
  fails twice.

No clock, no I/O: a resumed session judges as the uninterrupted one would.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import msgspec

from orchestrator.errors import ContextTooLong

CHARS_PER_TOKEN = 4.0
"""The estimate's ratio until a provider has reported a count to calibrate it."""
DEFAULT_FRACTION = 0.8
"""Compact when the context reaches this share of the usable input."""
MARGIN_TOKENS = 1_000
"""Kept free besides the output, for the request's own framing (tool specs, system)."""
PAUSE_AFTER = 2
"""Failed or ineffective compactions in a row before the fraction trigger pauses."""
PAUSE_ROUNDS = 3
"""How many rounds it pauses for."""
MIN_FREED = 0.2
"""A compaction that frees less than this share of the context counts as ineffective."""

Reason = Literal["fraction", "too_long", "by_hand"]


class Window(msgspec.Struct, frozen=True):
    """What a model accepts: `context` tokens in all, of which it may write `output`."""

    context: int
    output: int = 0

    @property
    def usable(self) -> int:
        """The input tokens a request may hold."""
        return max(self.context - self.output - MARGIN_TOKENS, 0)

    @classmethod
    def from_error(cls, message: str, request_tokens: int, output: int = 0) -> Window:
        """What a context-too-long error's message says of the window: the limit it
        states ("maximum context length is 8192 tokens", "prompt is too long: 210000
        tokens > 200000 maximum"), else the size of the request that failed (as the
        message states it, else `request_tokens`), an upper bound."""
        limit, requested = ContextTooLong.stated(message)
        return cls.from_failure(limit, request_tokens if requested is None else requested, output)

    @classmethod
    def from_failure(cls, limit: int | None, requested: int, output: int = 0) -> Window:
        """The window a context-too-long error tells: the `limit` the provider stated
        (`ContextTooLong.limit`), else `requested`, the size of the request that failed
        (`ContextTooLong.requested`, else the runtime's own count), an upper bound."""
        return cls(requested if limit is None else limit, output)


class Count(msgspec.Struct, frozen=True):
    """An agent's context in tokens: `reported` by the provider for a request of
    `reported_chars` characters, and `chars_since` characters added after it."""

    reported: int = 0
    reported_chars: int = 0
    chars_since: int = 0

    @property
    def chars_per_token(self) -> float:
        """The provider's own ratio, once it reported one; else the default."""
        if self.reported > 0 and self.reported_chars > 0:
            return self.reported_chars / self.reported
        return CHARS_PER_TOKEN

    @property
    def tokens(self) -> int:
        """The provider's count, and the estimate of what was added since."""
        return self.reported + round(self.chars_since / self.chars_per_token)

    def reported_now(self, tokens: int, chars: int) -> Count:
        """A provider's count for the whole context (`chars` characters): the estimate
        starts again from it."""
        return Count(tokens, chars, 0)

    def added(self, chars: int) -> Count:
        return msgspec.structs.replace(self, chars_since=self.chars_since + chars)

    def share_of(self, window: Window) -> float:
        """How full the usable input is (1.0: full)."""
        return self.tokens / window.usable if window.usable else 1.0


class Breaker(msgspec.Struct, frozen=True):
    """Compactions that failed or freed less than `MIN_FREED`, in a row, and the round
    the fraction trigger is paused until (exclusive)."""

    failures: int = 0
    paused_until: int = 0

    def after(self, *, before: int, after: int | None, at_round: int) -> Breaker:
        """The breaker once a compaction at `at_round` took the context from `before`
        tokens to `after` (None: it failed)."""
        freed = after is not None and before > 0 and (before - after) / before >= MIN_FREED
        if freed:
            return Breaker()
        failures = self.failures + 1
        if failures >= PAUSE_AFTER:
            return Breaker(0, at_round + 1 + PAUSE_ROUNDS)
        return Breaker(failures, self.paused_until)

    def paused(self, at_round: int) -> bool:
        return at_round < self.paused_until


def due(
    count: Count,
    window: Window,
    breaker: Breaker,
    at_round: int,
    *,
    fraction: float = DEFAULT_FRACTION,
    too_long: bool = False,
) -> Reason | None:
    """Whether to compact before the model is asked again, and why: a provider said
    the request was too long (always), or the context reached `fraction` of the usable
    input (unless the breaker pauses it)."""
    if too_long:
        return "too_long"
    if count.share_of(window) >= fraction and not breaker.paused(at_round):
        return "fraction"
    return None


SECTIONS: tuple[str, ...] = (
    "Goal and constraints",
    "User messages",
    "Decisions",
    "Files touched",
    "Errors and fixes",
    "Current work",
    "Next step",
)
"""The headings a summary must have, each with something under it (`## Goal and
constraints` ...): the user's messages and corrections verbatim, decisions and why, the
files touched and what changed, the errors and how they were resolved."""

_HEADING = re.compile(r"^#{1,6}\s*(.+?)\s*#*\s*$", re.MULTILINE)


def sections(summary: str) -> dict[str, str]:
    """The summary's text under each of its headings, by heading (case and trailing
    colons ignored)."""
    found: dict[str, str] = {}
    marks = list(_HEADING.finditer(summary))
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(summary)
        title = mark.group(1).rstrip(":").strip().lower()
        found[title] = summary[mark.end() : end].strip()
    return found


def missing_sections(summary: str) -> list[str]:
    """The required sections a summary lacks, or has empty: a summary with any is a
    failed attempt (one repair retry, then the fallback)."""
    found = sections(summary)
    return [name for name in SECTIONS if not found.get(name.lower())]


class Facts(msgspec.Struct, frozen=True, kw_only=True):
    """What the runtime knows without a model, for the fallback summary."""

    goal: str
    user_messages: Sequence[str] = ()
    files_touched: Sequence[str] = ()
    errors: Sequence[str] = ()
    current_work: str = ""
    next_step: str = ""


def fallback_summary(facts: Facts) -> str:
    """A summary with every required section, built from `facts` alone (deterministic:
    the same facts give the same text)."""

    def listed(items: Sequence[str], none: str) -> str:
        return "\n".join(f"- {item}" for item in items) if items else none

    bodies = (
        facts.goal or "(no goal recorded)",
        listed(facts.user_messages, "(none besides the goal)"),
        "(not known without a model summary: see the journal)",
        listed(facts.files_touched, "(none)"),
        listed(facts.errors, "(none recorded)"),
        facts.current_work or "(see the todo list and tasks below)",
        facts.next_step or "(see the todo list: the first open item)",
    )
    parts = [f"## {name}\n{body}" for name, body in zip(SECTIONS, bodies, strict=True)]
    return "[compacted without a model summary]\n\n" + "\n\n".join(parts)
