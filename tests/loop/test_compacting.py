"""What a compaction does, decided: every rule of `plan` and `fit` as a table, over
contexts built here, with no runtime (the runtime's side is in tests/compaction/)."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from orchestrator import AssistantMessage, Message, SystemMessage, ToolCall, ToolResult, UserMessage
from orchestrator.loop.anchors import HEADER, Anchors
from orchestrator.loop.compacting import (
    Checkpoint,
    PruneOnly,
    Refuse,
    Refused,
    Situation,
    Summarise,
    chars,
    fit,
    plan,
)
from orchestrator.loop.compaction import (
    MARGIN_TOKENS,
    Breaker,
    Count,
    Due,
    Reason,
    Window,
    learned_window,
    trigger,
)
from orchestrator.loop.summary import SUMMARY_HEADER

ANCHORS = Anchors(goal="port the parser")


def window(usable: int) -> Window:
    """A window of `usable` input tokens."""
    return Window(usable + MARGIN_TOKENS)


def reads(turns: int, output: int = 2_000) -> list[Message]:
    """A context of `turns` rounds, each a call whose output is `output` characters."""
    messages: list[Message] = [SystemMessage(content="you port code"), UserMessage(content="go")]
    for n in range(turns):
        messages.append(AssistantMessage(tool_calls=(ToolCall(id=f"c{n}", name="read_file"),)))
        messages.append(
            ToolResult(call_id=f"c{n}", name="read_file", content="x" * output, ref=f"{n}.0")
        )
    return messages


def replies(turns: int, size: int = 2_000, system: int = 20) -> list[Message]:
    """A context of `turns` long replies (nothing pruning could shorten)."""
    messages: list[Message] = [SystemMessage(content="s" * system), UserMessage(content="go")]
    for n in range(turns):
        messages.append(AssistantMessage(text=f"{n} " + "y" * size))
        messages.append(UserMessage(content=f"go on {n}"))
    return messages


def situation(
    messages: list[Message],
    usable: int | None,
    reason: Reason = "fraction",
    refused: Refused | None = None,
) -> Situation:
    return Situation(
        agent="main",
        reason=reason,
        messages=messages,
        count=Count(chars_since=chars(messages)),  # 4 characters a token
        known=window(usable) if usable is not None else None,
        refused=refused,
        anchors=ANCHORS,
        anchor_share=0.25,
        keep_recent=8_000,
        keep_outputs=20_000,
    )


CASES: list[tuple[str, Situation, type, str]] = [
    # (name, situation, decision, a phrase of its refusal)
    ("old outputs pruned are enough", situation(reads(40), 20_000), PruneOnly, ""),
    ("well within: pruning is enough", situation(reads(4), 20_000), PruneOnly, ""),
    ("by hand always summarises", situation(reads(40), 20_000, "by_hand"), Summarise, ""),
    ("replies cannot be pruned", situation(replies(40), 20_000), Summarise, ""),
    ("a context-too-long error", situation(replies(40), 20_000, "too_long"), Summarise, ""),
    ("by hand with no window", situation(replies(40), None, "by_hand"), Summarise, ""),
    (
        "a window the provider stated, smaller than known",
        situation(replies(40), 80_000, "too_long", Refused(limit=30_000)),
        Summarise,
        "",
    ),
    (
        "no summary could fit beside the system prompt",
        situation(replies(40, system=90_000), 20_000),
        Refuse,
        "does not fit its model's window even compacted",
    ),
    (
        "by hand, all last turns, nothing to prune",
        situation(replies(2, size=100), 20_000, "by_hand"),
        Refuse,
        "is all last turns",
    ),
]


@pytest.mark.parametrize(
    ("situation", "decision", "phrase"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_rule(situation: Situation, decision: type, phrase: str) -> None:
    made = plan(situation)
    assert type(made) is decision
    if isinstance(made, Refuse):
        assert phrase in made.message
    assert made.figures.reason == situation.reason
    assert made.figures.tokens == situation.count.tokens


def test_the_budgets_are_shares_of_the_usable_input_in_characters() -> None:
    made = plan(situation(replies(40), 20_000))
    assert isinstance(made, Summarise)
    assert made.ratio == 4.0
    assert made.figures.usable == made.aim == 20_000
    assert made.figures.learned is None
    limits = made.limits
    assert (limits.usable, limits.pruned_enough, limits.anchors) == (80_000, 40_000, 20_000)
    assert (limits.recent, limits.outputs) == (20_000, 20_000)  # a quarter, at most
    # The summary replaces what lies between the system prompt and the last turns.
    assert made.system == (made.pruned.messages[0],)
    assert 1 < made.recent < len(made.pruned.messages)
    assert chars(made.pruned.messages[made.recent :]) <= limits.recent


def test_with_no_window_the_aim_is_the_context_itself() -> None:
    messages = replies(40)
    made = plan(situation(messages, None, "by_hand"))
    assert isinstance(made, Summarise)
    assert made.figures.usable == 0
    assert made.aim == round(chars(messages) / 4)


def test_pruning_keeps_the_newest_outputs_and_the_anchors_of_the_last_checkpoint_go() -> None:
    old_anchors = UserMessage(content=HEADER + "\nan old list")
    made = plan(situation([*reads(40)[:2], old_anchors, *reads(40)[2:]], 20_000))
    assert isinstance(made, PruneOnly)
    assert old_anchors not in made.pruned.messages
    # The last two rounds whole, then 20,000 characters of the newest outputs: 12 of 40.
    assert made.pruned.refs == tuple(f"{n}.0" for n in range(28))


def test_prune_only_fits_the_pruned_context_and_the_anchors() -> None:
    made = plan(situation(reads(40), 20_000))
    assert isinstance(made, PruneOnly)
    added = [UserMessage(content="mail")]
    checkpoint = fit("main", made, ANCHORS, added)
    assert isinstance(checkpoint, Checkpoint)
    assert checkpoint.method == "pruned"
    assert checkpoint.messages[:-2] == tuple(made.pruned.messages)
    assert checkpoint.messages[-2] == added[0]
    last = checkpoint.messages[-1]
    assert isinstance(last, UserMessage)
    assert last.content.startswith(HEADER)
    assert checkpoint.after == round(chars(checkpoint.messages) / 4)


@pytest.mark.parametrize("method", ["summary", "fallback"])
def test_a_summary_goes_after_the_system_prompt_then_the_anchors_then_the_last_turns(
    method: str,
) -> None:
    made = plan(situation(replies(40), 20_000))
    assert isinstance(made, Summarise)
    checkpoint = fit("main", made, ANCHORS, (), "## Goal\nport it", method)  # type: ignore[arg-type]
    assert isinstance(checkpoint, Checkpoint)
    assert checkpoint.method == method
    assert checkpoint.dropped == 0
    system, said, anchors, *tail = checkpoint.messages
    assert system == made.system[0]
    assert said == UserMessage(content=f"{SUMMARY_HEADER}\n\n## Goal\nport it")
    assert isinstance(anchors, UserMessage)
    assert anchors.content.startswith(HEADER)
    assert tail == made.pruned.messages[made.recent :]


def test_what_does_not_fit_after_the_summary_is_cut_from_the_oldest_turns() -> None:
    made = plan(situation(replies(40), 20_000))
    assert isinstance(made, Summarise)
    added = replies(30)[2:]  # what the agent said while the summary was written
    checkpoint = fit("main", made, ANCHORS, added, "## Goal\nport it")
    assert isinstance(checkpoint, Checkpoint)
    assert checkpoint.method == "truncated"
    assert checkpoint.dropped > 0
    assert chars(checkpoint.messages) <= made.limits.usable
    assert checkpoint.messages[-1] == added[-1]  # the newest stay


def test_a_summary_too_long_for_the_window_even_alone_is_refused() -> None:
    made = plan(situation(replies(40), 20_000))
    assert isinstance(made, Summarise)
    refused = fit("main", made, ANCHORS, (), "z" * 90_000)
    assert isinstance(refused, Refuse)
    assert refused.why == "too_small"
    assert "for 20000 usable" in refused.message


@pytest.mark.parametrize(
    ("known", "tokens", "limit", "requested", "learned"),
    [
        # The provider's stated limit, keeping the known output (at most a quarter).
        (Window(200_000, 8_000), 150_000, 100_000, None, Window(100_000, 8_000)),
        (Window(200_000, 32_000), 150_000, 100_000, None, Window(100_000, 25_000)),
        # Nothing stated: the size of the request refused is an upper bound.
        (None, 9_000, None, 12_000, Window(12_000, 0)),
        (None, 9_000, None, None, Window(9_000, 0)),
        # Refused within what the known window should hold: the count runs low.
        (Window(8_000, 1_000), 7_000, 9_000, None, Window(7_000, 1_000)),
    ],
)
def test_a_context_too_long_error_teaches_a_window(
    known: Window | None, tokens: int, limit: int | None, requested: int | None, learned: Window
) -> None:
    assert learned_window(known, tokens, limit, requested) == learned


def test_a_context_too_long_error_sets_the_window_the_checkpoint_aims_at() -> None:
    made = plan(situation(replies(40), 80_000, "too_long", Refused(limit=30_000)))
    assert isinstance(made, Summarise)
    assert made.figures.learned == Window(30_000)
    assert made.aim == made.figures.usable == 30_000 - MARGIN_TOKENS
    # Nothing stated: the size of the request refused bounds it.
    made = plan(situation(replies(40), 80_000, "too_long", Refused(requested=21_000)))
    assert made.figures.learned == Window(21_000)


def test_a_learned_window_and_max_tokens_narrow_the_known_one() -> None:
    messages = replies(40)
    base = situation(messages, 80_000)
    made = plan(replace(base, learned=30_000))
    assert made.figures.usable == 30_000 - MARGIN_TOKENS
    assert made.figures.learned is None  # learned before: not this compaction's to journal
    made = plan(replace(base, known=Window(100_000), max_tokens=4_000))
    assert made.figures.usable == 100_000 - 4_000 - MARGIN_TOKENS


USABLE = window(10_000)
TRIGGERS: list[tuple[str, Count, Window | None, Breaker, Due | None]] = [
    # (name, count, known window, breaker, verdict) at round 5, at 0.8 of the usable input
    ("no window known", Count(reported=9_000, reported_chars=1), None, Breaker(), None),
    ("below the fraction", Count(reported=7_999, reported_chars=1), USABLE, Breaker(), None),
    (
        "at the fraction: the summary in the background",
        Count(reported=8_000, reported_chars=1),
        USABLE,
        Breaker(),
        Due("fraction", wait=False),
    ),
    (
        "paused by the breaker",
        Count(reported=9_000, reported_chars=1),
        USABLE,
        Breaker(paused_until=6),
        None,
    ),
    (
        "the whole window, paused or not: the agent waits",
        Count(reported=10_000, reported_chars=1),
        USABLE,
        Breaker(paused_until=6),
        Due("fraction", wait=True),
    ),
]


@pytest.mark.parametrize(
    ("count", "known", "breaker", "verdict"),
    [t[1:] for t in TRIGGERS],
    ids=[t[0] for t in TRIGGERS],
)
def test_the_trigger_at_a_round_boundary(
    count: Count, known: Window | None, breaker: Breaker, verdict: Due | None
) -> None:
    assert trigger(count, known, 0, None, breaker, 5, fraction=0.8) == verdict


def test_the_trigger_measures_against_the_learned_window() -> None:
    count = Count(reported=8_000, reported_chars=1)
    assert trigger(count, window(100_000), 0, None, Breaker(), 1) is None
    assert trigger(count, window(100_000), 9_000, None, Breaker(), 1) == Due("fraction", True)


def test_by_hand_a_checkpoint_no_smaller_than_the_context_is_refused() -> None:
    # A short context of small turns: a summary and the anchors outweigh the head they
    # replace (the demo's subagents grew 1,295 -> 1,416 tokens and more this way).
    made = plan(situation(replies(40, size=600), 20_000, "by_hand"))
    assert isinstance(made, Summarise)
    refused = fit("t1", made, ANCHORS, (), "## Goal\n" + "a long summary " * 600)
    assert isinstance(refused, Refuse)
    assert refused.why == "nothing"
    assert "compacting t1 would not shrink its context" in refused.message
    # A summary shorter than the head it replaces shrinks the context: made.
    checkpoint = fit("t1", made, ANCHORS, (), "## Goal\nport it")
    assert isinstance(checkpoint, Checkpoint)
    assert checkpoint.after < made.figures.tokens
