"""The judgement behind compaction (issue 21, first slice): the window, the token count
and its calibration, the trigger, the breaker, the summary's required sections and the
deterministic fallback."""

from __future__ import annotations

import pytest

from orchestrator.loop.compaction import (
    MARGIN_TOKENS,
    PAUSE_ROUNDS,
    Breaker,
    Count,
    Window,
    due,
)
from orchestrator.loop.summary import SECTIONS, Facts, fallback_summary, missing_sections


def test_the_usable_input_leaves_room_for_the_output_and_a_margin() -> None:
    assert Window(200_000, 32_000).usable == 200_000 - 32_000 - MARGIN_TOKENS
    assert Window(500, 1_000).usable == 0


@pytest.mark.parametrize(
    ("message", "limit"),
    [
        ("This model's maximum context length is 8192 tokens. However, you requested 9000", 8192),
        ("prompt is too long: 210000 tokens > 200000 maximum", 200_000),
        ("the request exceeds the context window of 32,768 tokens", 32_768),
        ("request too large", 12_345),  # nothing stated: the failed request's size bounds it
        # The figures in these are not the window: the input, and the excess.
        ("input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000", 200_000),
        ("prompt too long; exceeded max context length by 4096 tokens", 12_345),
        # No window stated, but the request's size is: the provider's count wins over ours.
        ("Your request exceeded the window: request (9000 tokens) is too long", 9_000),
    ],
)
def test_a_context_error_tells_the_window(message: str, limit: int) -> None:
    assert Window.from_error(message, request_tokens=12_345).context == limit


def test_a_context_error_s_figures_make_the_window() -> None:
    assert Window.from_failure(8_192, requested=9_000, output=1_000) == Window(8_192, 1_000)
    assert Window.from_failure(None, requested=9_000) == Window(9_000)  # an upper bound


def test_the_count_is_the_providers_plus_a_calibrated_estimate() -> None:
    count = Count().added(4_000)
    assert count.tokens == 1_000  # 4 characters a token, until a provider says otherwise
    count = count.reported_now(tokens=2_000, chars=6_000).added(3_000)
    assert count.chars_per_token == 3.0
    assert count.tokens == 3_000


def test_compaction_is_due_at_the_fraction_or_when_the_provider_refuses() -> None:
    window = Window(10_000 + MARGIN_TOKENS)  # 10,000 usable
    below, at = Count(reported=7_999, reported_chars=1), Count(reported=8_000, reported_chars=1)
    assert due(below, window, Breaker(), 1) is None
    assert due(at, window, Breaker(), 1) == "fraction"
    assert due(below, window, Breaker(), 1, too_long=True) == "too_long"
    assert due(at, window, Breaker(), 1, fraction=0.9) is None


def test_the_breaker_pauses_the_fraction_trigger_after_two_failures_in_a_row() -> None:
    window = Window(10_000 + MARGIN_TOKENS)
    full = Count(reported=9_000, reported_chars=1)
    breaker = Breaker().after(before=9_000, after=None, at_round=5)  # failed
    assert due(full, window, breaker, 6) == "fraction"  # one failure: not yet
    breaker = breaker.after(before=9_000, after=8_500, at_round=6)  # freed too little
    for at_round in range(7, 7 + PAUSE_ROUNDS):
        assert due(full, window, breaker, at_round) is None
        assert due(full, window, breaker, at_round, too_long=True) == "too_long"
    assert due(full, window, breaker, 7 + PAUSE_ROUNDS) == "fraction"
    # One that frees enough closes it again.
    assert breaker.after(before=9_000, after=2_000, at_round=20) == Breaker()


def test_a_summary_must_have_every_section_with_something_in_it() -> None:
    whole = "\n\n".join(f"## {name}\nsomething" for name in SECTIONS)
    assert missing_sections(whole) == []
    without = whole.replace("## Errors and fixes\nsomething", "## Errors and fixes\n")
    assert missing_sections(without) == ["Errors and fixes"]
    assert missing_sections("All done, nothing to say.") == list(SECTIONS)
    # Headings are matched whatever their level, case or trailing colon.
    loose = "\n".join(f"### {name.upper()}:\nx" for name in SECTIONS)
    assert missing_sections(loose) == []


def test_the_fallback_has_every_section_and_is_deterministic() -> None:
    facts = Facts(
        goal="write the parser",
        user_messages=("use tabs, not spaces",),
        files_touched=("src/parse.py",),
    )
    summary = fallback_summary(facts)
    assert missing_sections(summary) == []
    assert "use tabs, not spaces" in summary
    assert summary == fallback_summary(facts)
    assert missing_sections(fallback_summary(Facts(goal=""))) == []
