"""The config file and the usage ledger."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from orchestrator import Price, Usage
from orchestrator.config import Config, load_config, parse_config
from orchestrator.errors import ConfigError
from orchestrator.prices.cost import find_price
from orchestrator.session import usage_ledger
from orchestrator.session.ledger import Call, cache_share, usage_table

EXAMPLE = """
model = "anthropic:claude-sonnet-4-5"

[agents.planner]
model = "openai:gpt-4.1"
max_tokens = 4000

[agents.worker]
model = "ollama:qwen3:8b"

[providers.openrouter]
kind = "openai"
base_url = "https://openrouter.ai/api/v1"
api_key_env = "OPENROUTER_API_KEY"
headers = { "X-Title" = "orchestrator" }

[providers.anthropic]
thinking_budget = 2048
idle_timeout = 60
max_retries = 2

[prices."anthropic:claude-sonnet-4-5"]
input = 3.0
output = 15.0
cache_read = 0.3
cache_write = 3.75

[prices."gpt-4.1"]
input = 2.0
output = 8.0
"""


def test_example_config_parses() -> None:
    config = parse_config(EXAMPLE)
    assert config.providers["openrouter"].api_key_env == "OPENROUTER_API_KEY"
    assert config.provider("anthropic").thinking_budget == 2048
    assert config.provider("nothing-here").base_url is None
    assert config.agent("planner").max_tokens == 4000


def test_model_selection_order() -> None:
    config = parse_config(EXAMPLE)
    assert config.model_for("planner") == "openai:gpt-4.1"
    assert config.model_for("builder") == "anthropic:claude-sonnet-4-5"
    assert config.model_for("planner", cli_model="ollama:x") == "ollama:x"
    assert config.model_for("planner", cli_model="a:b", cli_roles={"planner": "c:d"}) == "c:d"
    assert Config().model_for("builder") is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('modle = "x"', "modle: Extra inputs are not permitted"),
        ("[providers.openai]\napi_key = 'sk-...'", "providers.openai.api_key: Extra inputs"),
        ("[prices.m]\ninput = -1\noutput = 1", "prices.m.input: Input should be greater"),
        ("[providers.x]\nthinking_budget = 10", "thinking_budget: Input should be greater"),
        ("model = ", "not valid TOML"),
    ],
)
def test_bad_config_is_one_clear_error(text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=r"cfg\.toml: ") as info:
        parse_config(text, source="cfg.toml")
    assert problem in str(info.value)


def test_load_config_missing_and_present(tmp_path: Path) -> None:
    assert load_config(tmp_path / "absent.toml") == Config()
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "absent.toml", missing_ok=False)
    path = tmp_path / "config.toml"
    path.write_text(EXAMPLE)
    assert load_config(path).model == "anthropic:claude-sonnet-4-5"


def test_price_lookup_by_full_then_bare_name() -> None:
    prices = parse_config(EXAMPLE).prices
    assert (
        find_price(prices, "anthropic:claude-sonnet-4-5") == prices["anthropic:claude-sonnet-4-5"]
    )
    assert find_price(prices, "openrouter:gpt-4.1") == prices["gpt-4.1"]
    assert find_price(prices, "ollama:qwen3:8b") is None


def test_cost_per_million_tokens_with_cache_prices() -> None:
    price = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=100_000,
        cache_read_tokens=2_000_000,
        cache_write_tokens=400_000,
    )
    assert price.cost(usage) == pytest.approx(3.0 + 1.5 + 0.6 + 1.5)
    # Without cache prices, cached tokens cost what input tokens cost.
    assert Price(input=1.0, output=0).cost(Usage(cache_read_tokens=1_000_000)) == 1.0


def used(agent: str, model: str, usage: Usage) -> Call:
    return (agent, model, usage)


def test_ledger_totals_per_agent_model_and_session() -> None:
    prices = parse_config(EXAMPLE).prices
    ledger = usage_ledger(
        [
            used("main", "openai:gpt-4.1", Usage(input_tokens=1000, output_tokens=100)),
            used("worker-1", "ollama:qwen3:8b", Usage(input_tokens=500)),
            used("main", "openai:gpt-4.1", Usage(input_tokens=2000)),
        ],
        prices,
    )
    assert ledger["session"]["calls"] == 3
    assert ledger["session"]["usage"] == {
        "input_tokens": 3500,
        "output_tokens": 100,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    main_cost = (3000 * 2.0 + 100 * 8.0) / 1e6
    assert ledger["by_agent"]["main"]["cost_usd"] == pytest.approx(main_cost)
    assert ledger["by_agent"]["worker-1"]["unpriced_calls"] == 1
    assert ledger["session"]["unpriced_calls"] == 1  # so the cost is a lower bound
    assert ledger["by_model"]["openai:gpt-4.1"]["calls"] == 2
    assert orjson.loads(orjson.dumps(ledger)) == ledger  # plain JSON data
    table = usage_table(ledger)
    assert "agent worker-1" in table
    assert "unpriced" in table
    assert "lower bound" in table


def test_the_cache_share_per_agent_and_session() -> None:
    first = Usage(input_tokens=100, cache_write_tokens=900, output_tokens=10)  # writes
    later = Usage(input_tokens=100, cache_read_tokens=900, output_tokens=10)  # reads
    calls = [used("main", "anthropic:claude-sonnet-4-5", u) for u in (first, later, later, later)]
    calls.append(used("w1", "openai:gpt-4.1", Usage(input_tokens=50)))
    ledger = usage_ledger(calls, {})
    assert cache_share(ledger["by_agent"]["main"]) == pytest.approx(2700 / 4000)
    assert cache_share(ledger["by_agent"]["w1"]) == 0
    assert cache_share(ledger["session"]) == pytest.approx(2700 / 4050)
    assert cache_share(usage_ledger([], {})["session"]) is None
    table = usage_table(ledger)
    assert "CACHED" in table.splitlines()[0]
    assert " 68% " in table.splitlines()[2]  # agent main: 2,700 of 4,000 prompt tokens
