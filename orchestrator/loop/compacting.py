"""What a compaction does, decided: one pure function over what the runtime gathered, as
`assess` decides a turn's end.

`plan(situation)` takes the context to compact (its messages, its count, the window it is
measured against, why it compacts) and its anchors as the fold has them, and returns one
decision with its budgets: prune only (old tool outputs to stubs leave it well within
the window), summarise (the part between the system prompt and the last turns, which
`Summarise.head` names), or refuse (no summary could fit, or a compaction by hand would
only add to a context of last turns). The runtime (team/compactor.py) performs it: it
asks the compactor model for the summary, then `fit` makes the checkpoint's messages with
the anchors as they are then, cutting the oldest turns when the summary left it too long
(truncated), or refuses. No clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, assert_never

import msgspec

from orchestrator.loop import anchors as anchor_text
from orchestrator.loop.anchors import Anchors
from orchestrator.loop.compaction import (
    Count,
    Method,
    Reason,
    Window,
    learned_window,
    window_of,
)
from orchestrator.loop.pruning import Pruned, cut_points, prune, recent_start
from orchestrator.loop.summary import SUMMARY_HEADER
from orchestrator.messages import Message, SystemMessage, UserMessage

PRUNED_ENOUGH = 0.5
"""Pruning alone will do when it leaves the context under this share of the usable
input."""
FLOOR_SUMMARY = 400
"""Characters at least of any summary, for the check that one could fit at all."""


class Limits(msgspec.Struct, frozen=True):
    """A compaction's budgets, in characters (the context's own ratio to tokens)."""

    usable: int  # the whole checkpoint
    pruned_enough: int  # the pruned context, for pruning alone to do
    anchors: int  # the anchors' text
    recent: int  # the last turns kept verbatim after a summary
    outputs: int  # the newest tool outputs kept whole by pruning


class Refused(msgspec.Struct, frozen=True):
    """What a provider's context-too-long error said: the window's `limit`, the size of
    the request it refused (`requested`), each when it said so."""

    limit: int | None = None
    requested: int | None = None


class Situation(msgspec.Struct, frozen=True, kw_only=True):
    """What is known of one agent's context when it compacts."""

    agent: str
    reason: Reason
    messages: Sequence[Message]  # the context now
    count: Count  # its size in tokens, and the ratio of its characters to them
    known: Window | None  # its model's window: configured, in the table, or claimed
    learned: int = 0  # the window a context-too-long error taught before (0: none)
    max_tokens: int | None = None  # the session's, kept free where the output is not known
    refused: Refused | None = None  # the error this compaction answers (`too_long`)
    anchors: Anchors  # what the checkpoint restores, as the fold has it now
    anchor_share: float  # of the usable input, for the anchors
    keep_recent: int  # tokens of last turns kept verbatim, at most
    keep_outputs: int  # tokens of newest tool outputs kept whole, at most


class Figures(msgspec.Struct, frozen=True):
    """What every decision says of the context: why it compacts, its size now, and the
    window it is measured against."""

    reason: Reason
    tokens: int
    usable: int  # the usable input of the window (0: not known)
    learned: Window | None  # the window a context-too-long error taught, for the record


class _Compacts(msgspec.Struct, frozen=True, kw_only=True):
    figures: Figures
    limits: Limits
    ratio: float  # characters a token
    aim: int  # tokens the checkpoint must fit in (`usable`, else the context's size)
    pruned: Pruned  # the context with old outputs pruned, its old anchors left out


class PruneOnly(_Compacts, frozen=True, kw_only=True):
    """Old tool outputs pruned are enough: no summary."""


class Summarise(_Compacts, frozen=True, kw_only=True):
    """A summary replaces the pruned context's head, after the system prompt and before
    its last turns (from `recent`)."""

    system: tuple[Message, ...]
    recent: int

    @property
    def head(self) -> list[Message]:
        """The messages the summary replaces."""
        return self.pruned.messages[len(self.system) : self.recent]


class Refuse(msgspec.Struct, frozen=True, kw_only=True):
    """No compaction: `too_small`, even the smallest checkpoint would not fit the window;
    `nothing`, a compaction by hand of a context that is all last turns, or whose
    checkpoint would be no smaller than the context."""

    figures: Figures
    why: Literal["too_small", "nothing"]
    message: str


class Checkpoint(msgspec.Struct, frozen=True):
    """The messages the context starts again from, and how they were made."""

    messages: tuple[Message, ...]
    method: Method
    after: int  # tokens, estimated
    dropped: int = 0  # messages dropped whole after the summary (`truncated`)


Decision = PruneOnly | Summarise | Refuse


def plan(s: Situation) -> Decision:
    """How to compact the context `s` describes (see the module's docstring)."""
    tokens = s.count.tokens
    window = window_of(s.known, s.learned, s.max_tokens)
    learned = None
    if s.refused is not None:  # the provider's word on the window wins
        window = learned = learned_window(window, tokens, s.refused.limit, s.refused.requested)
    usable = window.usable if window is not None else 0
    figures = Figures(s.reason, tokens, usable, learned)
    ratio = s.count.chars_per_token
    aim = usable or max(tokens, 1)  # no window known (by hand): aim at half the context
    limits = limits_of(aim, ratio, s.anchor_share, s.keep_recent, s.keep_outputs)
    pruned = prune([m for m in s.messages if not is_anchor(m)], keep_chars=limits.outputs)
    anchor = _anchor(s.anchors, limits)
    if chars([*pruned.messages, anchor]) <= limits.pruned_enough and s.reason != "by_hand":
        return PruneOnly(figures=figures, limits=limits, ratio=ratio, aim=aim, pruned=pruned)
    system = tuple(m for m in pruned.messages[:1] if isinstance(m, SystemMessage))
    floor = chars([*system, anchor]) + FLOOR_SUMMARY
    if floor > limits.usable:  # no summary can help: said before paying for one
        return too_small(figures, s.agent, round(floor / ratio), aim)
    recent = max(recent_start(pruned.messages, limits.recent), len(system))
    if s.reason == "by_hand" and recent == len(system) and not pruned.refs:
        return Refuse(
            figures=figures,
            why="nothing",
            message=f"the context of {s.agent} is all last turns ({tokens:,} tokens) "
            "with no old output to prune: a summary would only add to it",
        )
    return Summarise(
        figures=figures,
        limits=limits,
        ratio=ratio,
        aim=aim,
        pruned=pruned,
        system=system,
        recent=recent,
    )


def fit(
    agent: str,
    decision: PruneOnly | Summarise,
    anchors: Anchors,
    added: Sequence[Message] = (),
    summary: str = "",
    method: Method = "summary",
) -> Checkpoint | Refuse:
    """The checkpoint of `decision`, with `anchors` as they are now and the messages
    `added` to the context since it was planned; after a summary (`summary`, written by
    `method`), the oldest of the last turns are cut while it does not fit."""
    limits = decision.limits
    anchor = _anchor(anchors, limits)
    dropped = 0
    match decision:
        case PruneOnly():
            candidate = [*decision.pruned.messages, *added, anchor]
            method = "pruned"
        case Summarise():
            said = UserMessage(content=f"{SUMMARY_HEADER}\n\n{summary}")
            head = [*decision.system, said, anchor]
            tail = [*decision.pruned.messages[decision.recent :], *added]
            candidate = [*head, *tail]
            while chars(candidate) > limits.usable and tail:
                cut = next((p for p in cut_points(tail) if p > 0), len(tail))
                dropped += cut
                tail = tail[cut:]
                candidate = [*head, *tail]
                method = "truncated"
        case _:
            assert_never(decision)
    size = chars(candidate)
    after = round(size / decision.ratio)
    if size > limits.usable:
        return too_small(decision.figures, agent, after, decision.aim)
    now = decision.figures.tokens + round(chars(added) / decision.ratio)
    if decision.figures.reason == "by_hand" and after >= now:
        return Refuse(
            figures=decision.figures,
            why="nothing",
            message=f"compacting {agent} would not shrink its context ({now:,} → {after:,} "
            "tokens): the summary and the anchors take more room than the turns they "
            "replace; the context is left as it was",
        )
    return Checkpoint(tuple(candidate), method, after, dropped)


def limits_of(
    usable: int, ratio: float, anchor_share: float, keep_recent: int, keep_outputs: int
) -> Limits:
    """The budgets of a checkpoint of `usable` tokens, at `ratio` characters a token."""
    return Limits(
        usable=int(usable * ratio),
        pruned_enough=int(usable * PRUNED_ENOUGH * ratio),
        anchors=int(usable * anchor_share * ratio),
        recent=int(min(keep_recent, usable * 0.25) * ratio),
        outputs=int(min(keep_outputs, usable * 0.25) * ratio),
    )


def too_small(figures: Figures, agent: str, tokens: int, aim: int) -> Refuse:
    return Refuse(
        figures=figures,
        why="too_small",
        message=f"the context of {agent} does not fit its model's window even compacted: "
        f"{tokens} tokens (system prompt, summary and anchors) for {aim} usable; give the "
        "model a larger window ([windows] in the config, if it has one) or use a model "
        "with a larger one",
    )


def chars(messages: Sequence[Message]) -> int:
    return sum(m.chars() for m in messages)


def is_anchor(message: Message) -> bool:
    """Whether `message` is the anchors of an earlier checkpoint (a new one replaces it)."""
    return isinstance(message, UserMessage) and message.content.startswith(anchor_text.HEADER)


def _anchor(anchors: Anchors, limits: Limits) -> UserMessage:
    return UserMessage(content=anchor_text.render(anchors, limits.anchors))
