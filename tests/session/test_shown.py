"""The one notation people read sessions in (`session/shown.py`): durations, costs,
token counts, times, aligned tables and the drawn tree."""

from __future__ import annotations

import pytest

from orchestrator import Price, Usage
from orchestrator.session import usage_ledger
from orchestrator.session.ledger import usage_table
from orchestrator.session.report_text import agent_lines
from orchestrator.session.shown import (
    branches,
    cost,
    duration,
    moment,
    one_line,
    table,
    tokens,
    totals_cost,
    width,
)

LONG_MODEL = "openai-compatible:qwen2.5-coder-32b-instruct@http://localhost:8000/v1"


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-1, "0.0s"),
        (0, "0.0s"),
        (0.04, "0.0s"),
        (0.4, "0.4s"),
        (9.94, "9.9s"),
        (9.96, "10s"),
        (12.4, "12s"),
        (59.6, "1m00s"),
        (72, "1m12s"),
        (3599.4, "59m59s"),
        (3600, "1h00m"),
        (7500, "2h05m"),
        (86399, "23h59m"),
        (187495, "2d04h"),
    ],
)
def test_a_duration_has_two_units_at_most(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown


@pytest.mark.parametrize(
    ("usd", "lower_bound", "shown"),
    [
        (None, False, "unpriced"),
        (0.0, False, "$0"),
        (0.00001, False, "<$0.0001"),
        (0.0312, False, "$0.0312"),
        (0.0312, True, "$0.0312+"),
        (12.3456, False, "$12.35"),
        (1234.5, False, "$1,234.50"),
    ],
)
def test_one_cost_notation(usd: float | None, lower_bound: bool, shown: str) -> None:
    assert cost(usd, lower_bound=lower_bound) == shown


def test_a_ledgers_cost_says_unpriced_or_a_lower_bound_or_nothing_spent() -> None:
    priced = Price(input=1.0, output=2.0)
    calls = [("main", "a", Usage(input_tokens=1000)), ("main", "b", Usage(input_tokens=1000))]
    assert totals_cost(usage_ledger(calls, {})["session"]) == "unpriced"
    assert totals_cost(usage_ledger(calls, {"a": priced})["session"]) == "$0.0010+"
    assert totals_cost(usage_ledger(calls, {"a": priced, "b": priced})["session"]) == "$0.0020"
    assert totals_cost(usage_ledger([], {})["session"]) == "-"
    table_text = usage_table(usage_ledger(calls, {"a": priced}))
    assert "$0.0010+" in table_text
    assert "unpriced" in table_text  # model b's row
    assert table_text.endswith("the cost is a lower bound")


@pytest.mark.parametrize(
    ("count", "shown"),
    [(0, "0"), (535, "535"), (999, "999"), (1000, "1.0k"), (12_400, "12.4k"),
     (999_949, "999.9k"), (999_950, "1.0M"), (3_100_000, "3.1M")],
)  # fmt: skip
def test_token_counts_at_a_glance(count: int, shown: str) -> None:
    assert tokens(count) == shown


def test_times_to_the_second_in_utc() -> None:
    assert moment("2026-11-27T06:06:12.345678+00:00") == "2026-11-27 06:06:12 UTC"
    assert moment("2026-11-27T08:06:12+02:00") == "2026-11-27 06:06:12 UTC"
    assert moment("2026-11-27T06:06:12") == "2026-11-27 06:06:12"
    assert moment("c") == "c"  # not a time: shown as it is


def test_columns_align_to_their_widest_cell_whatever_the_model_name() -> None:
    lines = table(
        ("AGENT", "MODEL", "CALLS", "NOTE"),
        [["main", LONG_MODEL, "7", "x"], ["t1", "scripted", "12", "a longer note"],
         ["漢字", "m", "3", ""]],
        right={2},
    )  # fmt: skip
    assert lines == [
        f"  AGENT  MODEL{' ' * (len(LONG_MODEL) - 5)}  CALLS  NOTE",
        f"  main   {LONG_MODEL}      7  x",
        f"  t1     scripted{' ' * (len(LONG_MODEL) - 8)}     12  a longer note",
        f"  漢字   m{' ' * (len(LONG_MODEL) - 1)}      3",  # two columns each; no trailing space
    ]
    assert width("漢字") == 4
    assert width("e\u0301") == 1  # a combining accent takes no column


def test_the_agents_table_keeps_its_columns_with_a_long_model_name() -> None:
    def agent(model: str, tokens: int) -> dict[str, object]:
        return {
            "role": "worker", "model": model, "messages": 3, "model_calls": 1,
            "usage": {"input_tokens": 10, "output_tokens": 2}, "tokens": tokens,
            "window": None, "window_share": None, "compactions": 0,
            "breaker": {"failures": 0, "paused_until": 0, "paused": False},
        }  # fmt: skip

    lines = agent_lines({"main": agent(LONG_MODEL, 1200), "t1": agent("scripted", 80)})
    header, first, second = lines[2:]
    for column in ("MESSAGES", "CONTEXT"):
        at = header.index(column)
        assert first[at - 1] == second[at - 1] == " "
        assert first[at + len(column) - 1] != " "  # (the numbers end under the header)
    assert first.endswith("1,200 tokens")
    assert second.endswith("80 tokens")


def test_the_tree_is_drawn_with_its_glyphs() -> None:
    parents = {"t1": "main", "t2": "t1", "t3": "t1", "t4": "main", "t5": "t4", "t6": "gone"}
    assert branches(parents, "main") == [
        ("├─ ", "t1"),
        ("│  ├─ ", "t2"),
        ("│  └─ ", "t3"),
        ("├─ ", "t4"),
        ("│  └─ ", "t5"),
        ("└─ ", "t6"),  # its owner is not in the tree: it hangs from the root
    ]
    assert branches({"a": "b", "b": "a"}, "main") == []  # no way down from the root
    assert branches({}, "main") == []


def test_what_a_model_wrote_stays_on_its_line() -> None:
    assert one_line("two\nlines\x1b[2J and  spaces", 80) == "two lines\\x1b[2J and spaces"
    assert one_line("x" * 100, 10) == "x" * 9 + "…"
