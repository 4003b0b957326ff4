"""Known models' windows, matched on the model id of a spec, and the config's
`[windows."SPEC"]` table over them."""

from __future__ import annotations

import pytest

from orchestrator.config import Config, WindowConfig, parse_config
from orchestrator.errors import ConfigError
from orchestrator.models.windows import HOSTED, OPEN_WEIGHTS, known_window, window_for


def w(context: int, output: int = 0) -> WindowConfig:
    return WindowConfig(context=context, output=output)


def each(window: WindowConfig, *specs: str) -> list[tuple[str, WindowConfig]]:
    """Rows of the table below: each of `specs` has `window`."""
    return [(spec, window) for spec in specs]


@pytest.mark.parametrize(
    ("spec", "window"),
    [
        *each(
            w(200_000, 64_000),
            "anthropic:claude-sonnet-4-5",
            "anthropic:claude-sonnet-4-5-20250929",  # a dated snapshot
        ),
        ("anthropic:claude-3-5-sonnet-latest", w(200_000, 8_192)),
        *each(
            w(200_000, 32_000),
            "anthropic:claude-opus-4-20250514",
            "anthropic:claude-opus-4-1-20250805",  # longest prefix wins
        ),
        ("anthropic:claude-opus-4-6", w(1_000_000, 128_000)),
        ("openrouter:anthropic/claude-3.5-sonnet", w(200_000, 8_192)),  # vendor/, dots
        ("openai:gpt-4.1-mini", w(1_047_576, 32_768)),
        *each(w(128_000, 16_384), "openai:gpt-4o-2024-08-06", "openai:gpt-4o-mini-2024-07-18"),
        *each(w(200_000, 100_000), "openrouter:openai/o4-mini", "openai:o1-2024-12-17"),
        *each(w(400_000, 128_000), "openai:gpt-5-mini", "openai:gpt-5.1"),
        ("openai:gpt-3.5-turbo-0125", w(16_385, 4_096)),
        ("google:gemini-2.0-flash-001", w(1_048_576, 8_192)),
        # Open weights, as each server names them.
        *each(
            w(131_072),
            "ollama:llama3.1:8b",
            "ollama:llama3.2",
            "openai-compatible:meta-llama/Llama-3.1-8B-Instruct@http://127.0.0.1:8000/v1",
            "together:meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo",
            "groq:llama-3.3-70b-versatile",
        ),
        ("groq:llama3-8b-8192", w(8_192)),  # Llama 3, not 3.x
        *each(
            w(32_768, 8_192),
            "ollama:qwen2.5-coder:7b-instruct-q4_K_M",
            "openrouter:qwen/qwen-2.5-72b-instruct",
            "vllm:Qwen/Qwen2.5-0.5B-Instruct",
        ),
        ("ollama:mixtral:8x7b", w(32_768)),
        ("mistral:open-mixtral-8x22b", w(65_536)),
        ("openai-compatible:mistralai/Mixtral-8x7B-Instruct-v0.1", w(32_768)),
    ],
)
def test_a_known_model_has_its_documented_window(spec: str, window: WindowConfig) -> None:
    assert known_window(spec) == window


@pytest.mark.parametrize(
    "spec",
    [
        "anthropic:claude-opus-4-9",  # a model after the table: not "claude-opus-4"
        "openai:o1-mini",  # not "o1": its own limits, not confirmed
        "openai:gpt-5-chat-latest",  # not "gpt-5"
        "openai:gpt-4o-2024-05-13",  # the first gpt-4o snapshot wrote less
        "openrouter:openai/gpt-4o:extended",
        "openai:gpt-3.5-turbo-0613",
        "ollama:qwen2.5-math:7b",  # another model of the family
        "openai-compatible:Qwen/Qwen2.5-7B-Instruct-1M",
        "ollama:llama3.2-vision:11b",
        "deepseek:deepseek-chat",  # an alias whose model (and window) changes
        "openai-compatible:my-finetune",
        "scripted:demo.json",
    ],
)
def test_an_unknown_model_or_variant_has_no_window(spec: str) -> None:
    assert known_window(spec) is None


def test_the_table_holds_windows_with_room_for_input() -> None:
    for window in [*HOSTED.values(), *OPEN_WEIGHTS.values()]:
        assert window is None or 0 <= window.output < window.context


def test_the_config_wins_over_the_table_and_serves_every_provider_of_a_bare_name() -> None:
    config = parse_config(
        """
        [windows."openai-compatible:qwen2.5-coder:32b"]
        context = 131072
        output = 8192

        [windows."my-finetune"]
        context = 16384
        """
    )
    assert window_for(config, "openai-compatible:qwen2.5-coder:32b") == w(131_072, 8_192)
    assert window_for(config, "ollama:qwen2.5-coder:32b") == w(32_768, 8_192)  # the table
    assert window_for(config, "vllm:my-finetune") == w(16_384)
    assert window_for(config, "vllm:other") is None
    assert window_for(Config(), "anthropic:claude-haiku-4-5") == w(200_000, 64_000)


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        ('[windows."openai:m"]\ncontext = 8192\noutput = 8192', "windows.openai:m: Value error, "
         "output (8192) must be less than context (8192)"),
        ('[windows."openai:m"]\noutput = 100', "windows.openai:m.context: Field required"),
        ('[windows."openai:m"]\ncontext = 0', "windows.openai:m.context: Input should be greater"),
        ('[windows."openai:m"]\ncontext = 8192\noutput = -1', "windows.openai:m.output: Input "
         "should be greater than or equal to 0"),
        ('[windows."openai:m"]\ncontext = 8192\ninput = 100', "windows.openai:m.input: Extra "
         "inputs are not permitted"),
    ],
)  # fmt: skip
def test_a_bad_window_entry_is_an_error_naming_its_key(toml: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=r"^my\.toml: ") as info:
        parse_config(toml, source="my.toml")
    assert problem in str(info.value)
