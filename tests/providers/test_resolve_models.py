"""Model specs, config and environment to adapters."""

from __future__ import annotations

import pytest

from orchestrator.config import parse_config
from orchestrator.errors import ConfigError
from orchestrator.models.anthropic import AnthropicModel
from orchestrator.models.openai import OpenAIChatModel
from orchestrator.models.openai_responses import OpenAIResponsesModel
from orchestrator.models.resolve import provider_info, resolve_model

KEYS = {"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"}


def openai_model(spec: str, env: dict[str, str], config: str = "") -> OpenAIChatModel:
    model = resolve_model(spec, env=env, config=parse_config(config))
    assert isinstance(model, OpenAIChatModel)
    return model


def test_openai_preset_and_base_url_override() -> None:
    ep = openai_model("openai:gpt-4.1", KEYS).endpoint
    assert (ep.base_url, ep.api_key, ep.model) == ("https://api.openai.com/v1", "sk-o", "gpt-4.1")
    assert ep.max_tokens_field == "max_completion_tokens"
    proxied = openai_model("openai:gpt-4.1", {**KEYS, "OPENAI_BASE_URL": "https://proxy/v1"})
    assert proxied.endpoint.base_url == "https://proxy/v1"
    # Not in clear text to another machine, unless the config says so.
    with pytest.raises(ConfigError, match="unencrypted"):
        openai_model("openai:gpt-4.1", {**KEYS, "OPENAI_BASE_URL": "http://proxy/v1"})
    allowed = "[providers.openai]\nallow_key_over_http = true"
    plain = openai_model("openai:gpt-4.1", {**KEYS, "OPENAI_BASE_URL": "http://proxy/v1"}, allowed)
    assert plain.endpoint.api_key == "sk-o"


def test_missing_key_is_a_clear_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        resolve_model("openai:gpt-4.1", env={})
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
        resolve_model("anthropic:claude-sonnet-4-5", env={"ANTHROPIC_API_KEY": ""})


def test_anthropic_preset() -> None:
    config = parse_config(
        "[providers.anthropic]\nthinking_budget = 2048\nmax_tokens = 16000\n"
        "allow_key_over_http = true"
    )
    model = resolve_model(
        "anthropic:claude-sonnet-4-5",
        env={**KEYS, "ANTHROPIC_BASE_URL": "http://gw"},
        config=config,
    )
    assert isinstance(model, AnthropicModel)
    ep = model.endpoint
    assert (ep.base_url, ep.api_key, ep.thinking_budget, ep.max_tokens) == (
        "http://gw",
        "sk-a",
        2048,
        16000,
    )
    assert model.name == "anthropic:claude-sonnet-4-5"


def test_ollama_needs_no_key_and_honours_ollama_host() -> None:
    ep = openai_model("ollama:qwen3:8b", {}).endpoint
    assert (ep.base_url, ep.api_key, ep.model) == ("http://localhost:11434/v1", None, "qwen3:8b")
    assert ep.max_tokens_field == "max_tokens"
    assert openai_model("ollama:m", {"OLLAMA_HOST": "0.0.0.0"}).endpoint.base_url == (
        "http://0.0.0.0:11434/v1"
    )
    assert openai_model("ollama:m", {"OLLAMA_HOST": "https://gpu:8443/"}).endpoint.base_url == (
        "https://gpu:8443/v1"
    )


def test_openai_compatible_with_url_in_the_spec() -> None:
    model = openai_model("openai-compatible:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1", {})
    assert model.endpoint.base_url == "http://127.0.0.1:8000/v1"
    assert model.endpoint.model == "Qwen/Qwen3-8B"
    assert model.endpoint.api_key is None
    assert model.name == "openai-compatible:Qwen/Qwen3-8B"
    # The SDK's convention: OPENAI_API_KEY is sent when set...
    with_key = openai_model("openai-compatible:m@https://h/v1", KEYS)
    assert with_key.endpoint.api_key == "sk-o"
    local = openai_model("openai-compatible:m@http://localhost:8000/v1", KEYS)
    assert local.endpoint.api_key == "sk-o"
    # ...but not in clear text to another machine...
    assert openai_model("openai-compatible:m@http://h/v1", KEYS).endpoint.api_key is None
    # ...and not at all if the config says to send none.
    none = openai_model(
        "openai-compatible:m@https://h/v1", KEYS, '[providers.openai-compatible]\napi_key_env = ""'
    )
    assert none.endpoint.api_key is None


def test_openai_compatible_from_config_and_without_url() -> None:
    config = '[providers.openai-compatible]\nbase_url = "http://vllm:8000/v1"'
    assert (
        openai_model("openai-compatible:m", {}, config).endpoint.base_url == "http://vllm:8000/v1"
    )
    with pytest.raises(ConfigError, match="names no server"):
        resolve_model("openai-compatible:m", env={})


def test_named_provider_from_config() -> None:
    config = """
[providers.openrouter]
kind = "openai"
base_url = "https://openrouter.ai/api/v1"
api_key_env = "OPENROUTER_API_KEY"
headers = { "X-Title" = "orchestrator" }
max_retries = 1
idle_timeout = 30
"""
    with pytest.raises(ConfigError, match="OPENROUTER_API_KEY is not set"):
        openai_model("openrouter:anthropic/claude-sonnet-4.5", {}, config)
    model = openai_model(
        "openrouter:anthropic/claude-sonnet-4.5", {"OPENROUTER_API_KEY": "k"}, config
    )
    assert model.endpoint.headers == {"X-Title": "orchestrator"}
    assert model.endpoint.model == "anthropic/claude-sonnet-4.5"


def test_a_provider_of_ones_own_may_speak_the_responses_api() -> None:
    config = parse_config(
        '[providers.azure]\nkind = "openai-responses"\n'
        'base_url = "https://example.openai.azure.com/openai/v1"\napi_key_env = "AZURE_KEY"\n'
    )
    model = resolve_model("azure:gpt-5", env={"AZURE_KEY": "k"}, config=config)
    assert isinstance(model, OpenAIResponsesModel)
    assert model.name == "azure:gpt-5"


@pytest.mark.parametrize(
    ("spec", "config", "message"),
    [
        ("", "", "no model given"),
        ("gpt-4o", "", "is not PROVIDER:NAME"),
        ("mystery:m", "", "unknown model provider 'mystery'"),
        ("mine:m", "[providers.mine]\nbase_url = 'http://x'", 'needs kind = "openai"'),
        ("mine:m", "[providers.mine]\nkind = 'openai'", "needs a base_url"),
        ("openai-compatible:m@http", "", "server after @ must be an http:// or https:// URL"),
        ("ollama:m", "[providers.ollama]\nbase_url = 'localhost:11434'", "must start with http"),
    ],
)
def test_bad_specs(spec: str, config: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_model(spec, env={}, config=parse_config(config))


def test_keys_stay_out_of_reprs() -> None:
    for spec in ("openai:gpt-4.1", "anthropic:claude-sonnet-4-5"):
        model = resolve_model(spec, env=KEYS)
        assert "sk-" not in repr(model)
        assert "sk-" not in repr(model.endpoint)  # type: ignore[attr-defined]
    assert provider_info("openai", env=KEYS).key_env == "OPENAI_API_KEY"


CACHING = """
[providers.anthropic]
cache_ttl = "1h"
[providers.openai-compatible]
prompt_cache_key = true
[agents.planner]
cache = "off"
[agents.worker]
cache_ttl = "5m"
prompt_cache_key = false
[agents.reviewer]
model = "anthropic:claude-sonnet-4-5"
"""


def anthropic_caching(role: str | None, config: str = CACHING) -> tuple[str, str]:
    model = resolve_model(
        "anthropic:claude-sonnet-4-5", env=KEYS, config=parse_config(config), role=role
    )
    assert isinstance(model, AnthropicModel)
    return model.endpoint.cache, model.endpoint.cache_ttl


def test_a_roles_cache_settings_win_over_its_providers() -> None:
    # No role (every call site before roles had settings): the provider's alone.
    assert anthropic_caching(None) == ("auto", "1h")
    # A role sets what it names; what it leaves unset comes from the provider.
    assert anthropic_caching("planner") == ("off", "1h")
    assert anthropic_caching("worker") == ("auto", "5m")
    assert anthropic_caching("reviewer") == ("auto", "1h")
    assert anthropic_caching("unconfigured") == ("auto", "1h")
    # A role may ask for more than its provider does, and neither: the defaults.
    assert anthropic_caching("worker", '[agents.worker]\ncache_ttl = "1h"') == ("auto", "1h")
    assert anthropic_caching("worker", "") == ("auto", "5m")


def test_a_roles_prompt_cache_key_wins_over_its_providers() -> None:
    def sends_key(spec: str, role: str | None, config: str = CACHING) -> bool:
        model = resolve_model(spec, env=KEYS, config=parse_config(config), role=role)
        assert isinstance(model, OpenAIChatModel)
        return model.endpoint.prompt_cache_key

    local = "openai-compatible:m@http://127.0.0.1:8000/v1"
    assert sends_key(local, None)
    assert sends_key(local, "planner")
    assert not sends_key(local, "worker")
    # On by default for openai: a role turns it off; for other servers, a role turns it on.
    assert sends_key("openai:gpt-4.1", "planner")
    assert not sends_key("openai:gpt-4.1", "worker")
    assert sends_key("ollama:m", "mine", "[agents.mine]\nprompt_cache_key = true")
    assert not sends_key("ollama:m", "mine")


def test_role_cache_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"agents\.worker\.cache_ttl: "):
        parse_config('[agents.worker]\ncache_ttl = "2h"')
    with pytest.raises(ConfigError, match=r"agents\.worker\.cache: "):
        parse_config('[agents.worker]\ncache = "on"')


def test_openai_responses_is_openai_over_the_responses_api() -> None:
    model = resolve_model("openai-responses:gpt-5", env=KEYS, config=parse_config(""), role="main")
    assert isinstance(model, OpenAIResponsesModel)
    ep = model.endpoint
    assert (ep.url, ep.api_key, ep.model) == (
        "https://api.openai.com/v1/responses",
        "sk-o",
        "gpt-5",
    )
    assert ep.prompt_cache_key is True
    assert model.name == "openai-responses:gpt-5"
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        resolve_model("openai-responses:gpt-5", env={})
    proxied = resolve_model(
        "openai-responses:gpt-5",
        env={**KEYS, "OPENAI_BASE_URL": "https://proxy/v1"},
        config=parse_config("[providers.openai-responses]\nprompt_cache_key = false"),
    )
    assert isinstance(proxied, OpenAIResponsesModel)
    assert (proxied.endpoint.base_url, proxied.endpoint.prompt_cache_key) == (
        "https://proxy/v1",
        False,
    )
    # The spec, not a setting, says which API: `openai:` is still chat completions.
    assert isinstance(resolve_model("openai:gpt-5", env=KEYS), OpenAIChatModel)
