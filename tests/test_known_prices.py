"""The known models' prices (`orchestrator/prices/_table.py`, from genai-prices): the
table parses, covers the models our docs name, matches specs as `prices.known` says, and
the config's `[prices]` overrides a row."""

from __future__ import annotations

import datetime
import math
from pathlib import Path

import pytest

from orchestrator import Price, Usage
from orchestrator.config import load_config
from orchestrator.prices._table import DATE, GENERATED_FROM, ROWS, SOURCES
from orchestrator.prices.cost import call_cost, find_price
from orchestrator.prices.known import known_cost, known_row
from orchestrator.session import usage_ledger
from orchestrator.view.parts import pricing

MILLION = Usage(
    input_tokens=1_000_000,
    output_tokens=1_000_000,
    cache_read_tokens=1_000_000,
    cache_write_tokens=1_000_000,
)


def test_the_table_parses_and_names_its_source() -> None:
    assert GENERATED_FROM.startswith("genai-prices ")
    assert datetime.date.fromisoformat(DATE)
    assert set(SOURCES) == {"anthropic", "openai"}
    assert all(url.startswith("https://") for url in SOURCES.values())
    for name, (provider, *figures) in ROWS.items():
        assert name == name.lower(), name
        assert ":" not in name, name
        assert provider in SOURCES, name
        assert len(figures) == 4, name
        assert all(isinstance(f, float) and math.isfinite(f) and f >= 0 for f in figures), name
        # Every row is a valid config price, so an override and a row mean the same.
        Price(input=figures[0], output=figures[1], cache_read=figures[2], cache_write=figures[3])


@pytest.mark.parametrize(
    "row",
    [
        *("gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o", "gpt-4o-mini"),
        *("o1", "o3", "o3-mini", "o4-mini"),
        *("claude-sonnet-4", "claude-sonnet-4-5", "claude-opus-4", "claude-opus-4-1"),
        *("claude-opus-4-5", "claude-haiku-4-5"),
    ],
)
def test_the_models_our_docs_name_have_a_row(row: str) -> None:
    assert row in ROWS


@pytest.mark.parametrize(
    ("spec", "row"),
    [
        ("openai:gpt-4.1", "gpt-4.1"),
        ("gpt-4.1", "gpt-4.1"),
        ("openai:gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("openai:gpt-4o-2024-08-06", "gpt-4o"),
        ("openai:gpt-4o-2024-05-13", "gpt-4o-2024-05-13"),  # its own, older price
        ("openai:o1-2024-12-17", "o1"),
        ("openai:o1-mini", "o1-mini"),
        ("anthropic:claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("anthropic:claude-opus-4-20250514", "claude-opus-4"),
        ("anthropic:claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("anthropic:claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
        ("openrouter:anthropic/claude-3.5-sonnet", "claude-3-5-sonnet"),
        ("openrouter:openai/gpt-4o", "gpt-4o"),
        ("openai:GPT-4o@http://127.0.0.1:9/v1", "gpt-4o"),
        # Not a row: another model that starts with a row's name, or not a known one.
        ("anthropic:claude-opus-4-99", None),
        ("openai:gpt-4o-mini-tts", None),
        ("openai:gpt-5-chat-latest", None),
        ("ollama:qwen3:8b", None),
        ("ollama:gpt-oss:20b", None),  # open weights, run locally for nothing
        ("scripted:script.json", None),
    ],
)
def test_a_spec_matches_its_row(spec: str, row: str | None) -> None:
    assert known_row(spec) == row


def test_a_known_model_costs_its_row() -> None:
    _, given, output, cache_read, cache_write = ROWS["claude-sonnet-4-5"]
    spec = "anthropic:claude-sonnet-4-5-20250929"
    assert known_cost(spec, MILLION) == pytest.approx(given + output + cache_read + cache_write)
    assert call_cost({}, spec, MILLION) == known_cost(spec, MILLION)
    assert known_cost("ollama:qwen3:8b", MILLION) is None
    assert call_cost({}, "ollama:qwen3:8b", MILLION) is None


def test_config_prices_override_a_row(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[prices."gpt-4.1"]\ninput = 1.0\noutput = 2.0\n')
    prices = load_config(path).prices
    # By the bare name for every provider, by the full spec first, the table for the rest.
    assert find_price(prices, "openai:gpt-4.1") == Price(input=1.0, output=2.0)
    spec_first = {**prices, "openai:gpt-4.1": Price(input=9.0, output=9.0)}
    assert find_price(spec_first, "openai:gpt-4.1") == Price(input=9.0, output=9.0)
    _, given, output, cache_read, cache_write = ROWS["gpt-4o"]
    assert find_price(prices, "openai:gpt-4o") == Price(
        input=given, output=output, cache_read=cache_read, cache_write=cache_write
    )
    # The override's missing cache prices are its input price, not the row's.
    assert call_cost(prices, "openai:gpt-4.1", MILLION) == pytest.approx(1.0 + 2.0 + 1.0 + 1.0)


def test_a_session_without_config_prices_costs_real_money() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    calls = [("main", "openai:gpt-4.1", usage), ("worker-1", "ollama:qwen3:8b", usage)]
    _, given, output, _, _ = ROWS["gpt-4.1"]
    ledger = usage_ledger(calls, {})
    assert ledger["session"]["cost_usd"] == pytest.approx(given + output)
    assert ledger["session"]["unpriced_calls"] == 1
    assert ledger["by_agent"]["worker-1"]["cost_usd"] is None
    # The live view prices calls the same way.
    assert pricing({})("openai:gpt-4.1", usage) == pytest.approx(given + output)
    assert pricing({})("ollama:qwen3:8b", usage) is None
    # With a `[prices]` table, the ledger takes it first and the table for the rest.
    cheap = {"gpt-4.1": Price(input=1.0, output=1.0)}
    assert usage_ledger(calls, cheap)["session"]["cost_usd"] == pytest.approx(2.0)
