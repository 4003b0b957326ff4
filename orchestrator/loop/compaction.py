"""When an agent's context must be compacted, and what a compaction leaves: pure
judgement over values the runtime hands in (team/compactor.py acts on it), and the
compaction's record.

- `Window`: what a model accepts (its context window less the output it may write and a
  margin), from config, a table of known models, or a context-too-long error.
- `Count`: an agent's context size in tokens: the provider's last reported input count,
  and an estimate of what was added since, calibrated on the provider's own counts.
- `Breaker`: compactions that failed or freed too little, in a row, pause the fraction
  trigger for some rounds (never the one a context-too-long error pulls).
- `due`: whether to compact now, and why; `trigger`, the same at a round boundary,
  from what is known of the model's window; `learned_window`, what a context-too-long
  error teaches of the window.
- `ContextCompacted`: the record of a compaction, a checkpoint: the agent's live context
  starts again from its messages (state/context.py folds it).

What a compaction does once due (prune only, summarise, truncate or refuse) is decided in
`compacting.py`; the summary's request, sections and fallback are in `summary.py`,
pruning in `pruning.py`, the anchors in `anchors.py`. No clock, no I/O: a resumed session judges
as the uninterrupted one would.
"""

from typing import ClassVar, Literal

import msgspec

from orchestrator.errors import ContextTooLong
from orchestrator.eventbase import EventBase
from orchestrator.messages import Message, Usage

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
    def from_error(cls, message: str, request_tokens: int, output: int = 0) -> "Window":
        """What a context-too-long error's message says of the window: the limit it
        states ("maximum context length is 8192 tokens", "prompt is too long: 210000
        tokens > 200000 maximum"), else the size of the request that failed (as the
        message states it, else `request_tokens`), an upper bound."""
        limit, requested = ContextTooLong.stated(message)
        return cls.from_failure(limit, request_tokens if requested is None else requested, output)

    @classmethod
    def from_failure(cls, limit: int | None, requested: int, output: int = 0) -> "Window":
        """The window a context-too-long error tells: the `limit` the provider stated
        (`ContextTooLong.limit`), else `requested`, the size of the request that failed
        (`ContextTooLong.requested`, else the runtime's own count), an upper bound."""
        return cls(requested if limit is None else limit, output)


def window_of(known: Window | None, learned: int, max_tokens: int | None) -> Window | None:
    """The window a model's requests are measured against: the `known` one (config, the
    table, the model's claim), or the one `learned` from a context-too-long error when
    smaller. A learned window keeps most of itself for input; where the output a model
    may write is not known, `max_tokens` (the session's) is kept free for it."""
    if learned and (known is None or learned < known.context):
        known = Window(learned, min(known.output if known else 0, learned // 4))
    if known is not None and not known.output and max_tokens:
        known = Window(known.context, min(max_tokens, known.context // 4))
    return known


def learned_window(
    known: Window | None, tokens: int, limit: int | None, requested: int | None
) -> Window:
    """The window a provider's context-too-long error teaches, for a context of `tokens`
    (the runtime's count) measured against `known`: the `limit` it stated, else the size
    of the request it refused (`requested`, else `tokens`), an upper bound. It keeps
    `known`'s output, but never most of a small window; and when the provider refused
    what `known` should hold, the count runs low, so what failed is the bound."""
    stated = Window.from_failure(limit, requested or tokens)
    output = min(known.output if known is not None else 0, stated.context // 4)
    if known is not None and known.context <= stated.context:
        return Window(min(known.context, tokens), output)
    return Window(stated.context, output)


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

    def reported_now(self, tokens: int, chars: int) -> "Count":
        """A provider's count for the whole context (`chars` characters): the estimate
        starts again from it."""
        return Count(tokens, chars, 0)

    def added(self, chars: int) -> "Count":
        return msgspec.structs.replace(self, chars_since=self.chars_since + chars)

    def share_of(self, window: Window) -> float:
        """How full the usable input is (1.0: full)."""
        return self.tokens / window.usable if window.usable else 1.0


class Breaker(msgspec.Struct, frozen=True):
    """Compactions that failed or freed less than `MIN_FREED`, in a row, and the round
    the fraction trigger is paused until (exclusive)."""

    failures: int = 0
    paused_until: int = 0

    def after(
        self, *, before: int, after: int | None, at_round: int, min_freed: float = MIN_FREED
    ) -> "Breaker":
        """The breaker once a compaction at `at_round` took the context from `before`
        tokens to `after` (None: it failed)."""
        freed = after is not None and before > 0 and (before - after) / before >= min_freed
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
    input (unless the breaker pauses it), or all of it (always)."""
    if too_long:
        return "too_long"
    share = count.share_of(window)
    # Paused or not, a context over the window would only be refused by the provider.
    if share >= 1.0 or (share >= fraction and not breaker.paused(at_round)):
        return "fraction"
    return None


class Due(msgspec.Struct, frozen=True):
    """A compaction due at a round boundary: why, and whether the agent waits for its
    checkpoint (`wait`: the context holds the whole usable input) or goes on while its
    summary is written."""

    reason: Reason
    wait: bool


def trigger(
    count: Count,
    known: Window | None,
    learned: int,
    max_tokens: int | None,
    breaker: Breaker,
    at_round: int,
    *,
    fraction: float = DEFAULT_FRACTION,
) -> Due | None:
    """The automatic trigger, at a round boundary: whether the context of `count`
    tokens is `due` against its model's window (`window_of` the `known` one, the
    `learned` one and `max_tokens`), and whether the agent waits for the checkpoint."""
    window = window_of(known, learned, max_tokens)
    if window is None:
        return None
    reason = due(count, window, breaker, at_round, fraction=fraction)
    if reason is None:
        return None
    return Due(reason, wait=count.share_of(window) >= 1.0)


Method = Literal["pruned", "summary", "fallback", "truncated"]
"""How a compaction shrank the context: old tool outputs pruned (that alone was enough),
a model's summary, the summary built without a model (the model's failed twice), or
either with the oldest turns dropped too (it did not fit otherwise)."""


class CompactionStarted(EventBase, frozen=True, tag="compaction_started"):
    """A compaction of the agent's context began (not journaled: its result is)."""

    persist: ClassVar[bool] = False
    reason: Reason
    tokens: int  # the context's size now (estimated)
    usable: int  # the usable input of its model's window (0: not known)


class ContextCompacted(EventBase, frozen=True, tag="context_compacted"):
    """Record: a checkpoint. The agent's live context starts again here, from `messages`
    (its system prompt, the summary with the anchors, the last turns verbatim or the
    pruned context); everything before stays in the journal, for `recall` and
    `sessions show --transcript --full`."""

    messages: tuple[Message, ...]
    reason: Reason
    method: Method
    before: int  # tokens, estimated, of the context it replaces
    after: int  # tokens, estimated, of `messages`
    pruned: int = 0  # tool outputs replaced by a stub
    dropped: int = 0  # messages dropped whole, beyond the summary (method `truncated`)
    summary_chars: int = 0
    attempts: int = 0  # summary calls made to a model (0: pruning sufficed)
    usage: Usage | None = None  # what the summary calls spent
    model: str = ""  # the summary's model (for cost), when one was called
    window_model: str = ""  # the agent's model, when `window` was learned for it
    window: int = 0  # the context window a context-too-long error revealed (0: none)
    min_freed: float = MIN_FREED  # the share it had to free to count as effective

    def figures(self) -> dict[str, object]:
        """What people and programs are shown of it: everything but its messages (the
        context, which `sessions show --transcript` prints)."""
        names = ("reason", "method", "before", "after", "pruned", "dropped", "attempts")
        return {
            "agent": self.agent,
            **{name: getattr(self, name) for name in names},
            "summary_chars": self.summary_chars,
            "model": self.model,
        }

    files: tuple[str, ...] = ()  # the files touched by the agent so far, for the anchors
    goal: str = ""  # what the agent was started to do (its first user message)
    # The files it read so far, each with the ref of its newest read (`recall` reads
    # that output back), oldest first.
    read: tuple[tuple[str, str], ...] = ()


CompactionRecords = ContextCompacted
"""Compaction's records (see `Record` in state/events.py)."""
