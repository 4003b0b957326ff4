"""What known models accept: their context window and output limit, by model id, for the
compaction that keeps a context inside them.

`window_for(config, spec)` is the window of a model spec ("anthropic:claude-sonnet-4-5",
"openai:gpt-4.1-mini", "openrouter:anthropic/claude-3.5-sonnet"): the config's
`[windows."SPEC"]` entry, else this table, else None (the runtime then learns it from the
model's first context-too-long error, `ContextTooLong.limit`).

An id is matched on the model part of the spec, lower-cased, without a vendor prefix
("anthropic/"), an `@URL` or an Ollama tag's colon. The longest known name that starts it
wins, and only if what follows is a version tail: for a hosted model a date
("-20250514", "-2024-08-06"), "-latest" or a three-digit revision ("-001"); for open
weights a size ("-8b", "-70b-instruct-q4_k_m"). So "claude-opus-4-9" is not taken for
"claude-opus-4", nor "o1-mini" for "o1", nor "qwen2.5-math-7b" for "qwen2.5".

The figures are each maker's documented ones (a comment per family says where from);
what could not be confirmed is left out, as a wrong window is worse than none. A served
model's window can be smaller than its maker's (vLLM's `--max-model-len`, llama.cpp's
`-c`, Ollama's `num_ctx`): set `[windows]` for such a server, or let its first error
teach it. `output` 0 means the model has no output limit of its own below its window.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from orchestrator.config import Config, WindowConfig


def _w(context: int, output: int = 0) -> WindowConfig:
    return WindowConfig(context=context, output=output)


_CLAUDE_200K_4K = _w(200_000, 4_096)
_CLAUDE_200K_8K = _w(200_000, 8_192)
_CLAUDE_200K_32K = _w(200_000, 32_000)
_CLAUDE_200K_64K = _w(200_000, 64_000)
_CLAUDE_1M = _w(1_000_000, 128_000)
_GPT_4O = _w(128_000, 16_384)
_GPT_41 = _w(1_047_576, 32_768)
_O_SERIES = _w(200_000, 100_000)
_GPT_5 = _w(400_000, 128_000)
_GPT_35 = _w(16_385, 4_096)
_GEMINI_2 = _w(1_048_576, 8_192)

HOSTED: Mapping[str, WindowConfig | None] = {
    # Anthropic's models overview (Claude 3.x and 4 to 4.5: 200K context).
    "claude-3-haiku": _CLAUDE_200K_4K,
    "claude-3-opus": _CLAUDE_200K_4K,
    "claude-3-5-haiku": _CLAUDE_200K_8K,
    "claude-3-5-sonnet": _CLAUDE_200K_8K,
    "claude-3-7-sonnet": _CLAUDE_200K_64K,
    "claude-opus-4": _CLAUDE_200K_32K,
    "claude-opus-4-1": _CLAUDE_200K_32K,
    "claude-sonnet-4": _CLAUDE_200K_64K,
    # platform.claude.com/docs/en/models/<model>/overview ("Context window · Max output").
    "claude-sonnet-4-5": _CLAUDE_200K_64K,
    "claude-haiku-4-5": _CLAUDE_200K_64K,
    "claude-opus-4-5": _CLAUDE_200K_64K,
    "claude-opus-4-6": _CLAUDE_1M,
    "claude-sonnet-4-6": _CLAUDE_1M,
    "claude-opus-4-7": _CLAUDE_1M,
    "claude-opus-4-8": _CLAUDE_1M,
    "claude-sonnet-5": _CLAUDE_1M,
    "claude-opus-5": _CLAUDE_1M,
    "claude-sonnet-5-5": _CLAUDE_1M,
    "claude-opus-5-5": _CLAUDE_1M,
    "claude-haiku-5-5": _CLAUDE_1M,
    "claude-fable-5-1": _CLAUDE_1M,
    # OpenAI's model pages ("context window", "max output tokens").
    "gpt-4o": _GPT_4O,
    "gpt-4o-mini": _GPT_4O,
    "gpt-4o-2024-05-13": None,  # the first snapshot's output limit differs; not confirmed
    "gpt-4.1": _GPT_41,
    "gpt-4.1-mini": _GPT_41,
    "gpt-4.1-nano": _GPT_41,
    "o1": _O_SERIES,
    "o3": _O_SERIES,
    "o3-mini": _O_SERIES,
    "o4-mini": _O_SERIES,
    "gpt-5": _GPT_5,
    "gpt-5-mini": _GPT_5,
    "gpt-5-nano": _GPT_5,
    "gpt-5.1": _GPT_5,
    "gpt-5.2": _GPT_5,
    "gpt-3.5-turbo": _GPT_35,
    "gpt-3.5-turbo-0125": _GPT_35,
    "gpt-3.5-turbo-1106": _GPT_35,
    # Google's model pages: the input token limit (as the whole window: output is apart).
    "gemini-2.0-flash": _GEMINI_2,
    "gemini-2.0-flash-lite": _GEMINI_2,
    "gemini-2.5-pro": _w(1_048_576, 65_535),  # Vertex AI's model page
}
"""Models of hosted APIs, by id; None: known not to be what the name's prefix says."""

_LLAMA_3X = _w(131_072)
_QWEN_25 = _w(32_768, 8_192)

OPEN_WEIGHTS: Mapping[str, WindowConfig] = {
    # Meta's model cards (config.json max_position_embeddings; llama.context_length).
    "llama3": _w(8_192),
    "llama3.1": _LLAMA_3X,
    "llama3.2": _LLAMA_3X,
    "llama3.3": _LLAMA_3X,
    # Qwen's model cards: config.json is set for 32,768 tokens (131,072 only with YaRN
    # enabled by hand), generation 8,192.
    "qwen2.5": _QWEN_25,
    "qwen2.5-coder": _QWEN_25,
    # Mistral's announcements and model cards: 32k and 64k.
    "mixtral-8x7b": _w(32_768),
    "mixtral-8x22b": _w(65_536),
}
"""Open-weight families, by the name an id starts with before its size."""

_HOSTED_TAIL = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-\d{3}|-latest)?")
_SIZE = re.compile(r"\d+(?:\.\d+)?b|\d+x\d+b")
_NOT_THE_SAME_MODEL = {"1m", "math", "vl"}  # qwen2.5-7b-instruct-1m has 1M tokens, ...
_ALIASES = (
    (re.compile(r"^(?:meta-)?llama-?3(?=[.:-]|$)"), "llama3"),  # Llama-3.1-8B, llama3.1:8b
    (re.compile(r"^qwen-2\.5"), "qwen2.5"),  # OpenRouter's qwen/qwen-2.5-72b-instruct
    (re.compile(r"^open-mixtral"), "mixtral"),  # Mistral's API names
)


def model_id(spec: str) -> str:
    """The model part of `spec` as the table names it: "openrouter:anthropic/claude-3.5-
    sonnet" -> "claude-3-5-sonnet", "ollama:llama3.1:8b" -> "llama3.1-8b"."""
    _, sep, model = spec.partition(":")
    name = (model if sep else spec).lower().split("@", 1)[0].rsplit("/", 1)[-1]
    name = name.replace(":", "-")
    if name.startswith("claude"):
        name = name.replace(".", "-")  # OpenRouter writes claude-3.5-sonnet
    for alias, canonical in _ALIASES:
        name = alias.sub(canonical, name)
    return name


def known_window(spec: str) -> WindowConfig | None:
    """The documented window of the model `spec` names, or None if it is not a known
    model (or a variant the table cannot vouch for)."""
    name = model_id(spec)
    hosted = _longest(HOSTED, name, _is_hosted_tail)
    if hosted is not None:
        return HOSTED[hosted]
    family = _longest(OPEN_WEIGHTS, name, _is_size_tail)
    return OPEN_WEIGHTS[family] if family is not None else None


def window_for(config: Config, spec: str) -> WindowConfig | None:
    """The window of model `spec`: the config's `[windows]` entry, else a known model's,
    else None (learn it from the model's first context-too-long error)."""
    return config.window(spec) or known_window(spec)


def _longest(
    table: Mapping[str, object], name: str, tail_ok: Callable[[str, str], bool]
) -> str | None:
    matches = [key for key in table if name.startswith(key) and tail_ok(key, name[len(key) :])]
    return max(matches, key=len, default=None)


def _is_hosted_tail(key: str, tail: str) -> bool:
    return _HOSTED_TAIL.fullmatch(tail) is not None


def _is_size_tail(key: str, tail: str) -> bool:
    """No tail, "-latest", or a size and what follows it ("-8b-instruct"); a key that
    names its size already ("mixtral-8x7b") takes any tail ("-instruct-v0.1", "-32768")."""
    if tail in ("", "-latest"):
        return True
    if not tail.startswith("-"):
        return False
    words = tail[1:].split("-")
    if _NOT_THE_SAME_MODEL & set(words):
        return False
    return _SIZE.search(key) is not None or _SIZE.fullmatch(words[0]) is not None
