"""Context-too-long errors in each provider's real words: recognised as `ContextTooLong`,
with the window (`limit`) and the request's input (`requested`) the provider stated, or
None where it states nothing. Each body is the provider's own, as users reported it in the
issue threads named beside it (figures as reported); `error_from_response` reads it whole,
as the adapters do. Then both adapters against a server on 127.0.0.1 that answers in those
shapes, and one that enforces a window of its own (`window_chars`).
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from adapter_setup import http_options
from provider_server import ContextShape, LoopbackServer, Reply, Sleeps, context_too_long
from sdk_types import anthropic_text, openai_text

from orchestrator import AssistantMessage, Model, ModelRequest, UserMessage
from orchestrator.errors import ContextTooLong
from orchestrator.models import collect
from orchestrator.models.anthropic import AnthropicEndpoint, AnthropicModel
from orchestrator.models.failures import classify, error_from_response
from orchestrator.models.openai import OpenAIChatModel, OpenAIEndpoint

OPENAI_400 = "invalid_request_error"


def openai(message: str, code: str | None = "context_length_exceeded") -> dict[str, Any]:
    return {"error": {"message": message, "type": OPENAI_400, "param": "messages", "code": code}}


def anthropic(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


CASES = [
    # --- OpenAI ----------------------------------------------------------------------------
    pytest.param(  # webtimemachine/wtm2#579, crewAI-examples#121
        400,
        openai(
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 204308 tokens. Please reduce the length of the messages."
        ),
        128_000,
        204_308,
        id="openai",
    ),
    pytest.param(  # conghaonet/hao_chatgpt#4: the completion asked for is not context
        400,
        openai(
            "This model's maximum context length is 4097 tokens. However, you requested "
            "4268 tokens (4012 in the messages, 256 in the completion). Please reduce the "
            "length of the messages or completion."
        ),
        4097,
        4012,
        id="openai-completion",
    ),
    pytest.param(  # FoundationAgents/OpenManus#62: tool specs count as input
        400,
        openai(
            "This model's maximum context length is 8192 tokens. However, you requested "
            "8213 tokens (6683 in the messages, 730 in the functions, and 800 in the "
            "completion). Please reduce the length of the messages, functions, or completion."
        ),
        8192,
        7413,
        id="openai-functions",
    ),
    pytest.param(  # aboutmydreams/custom_data_gpt#2 (older completions wording)
        400,
        openai(
            "This model's maximum context length is 4097 tokens, however you requested 6539 "
            "tokens (6283 in your prompt; 256 for the completion). Please reduce your prompt; "
            "or completion length.",
            code=None,
        ),
        4097,
        6283,
        id="openai-legacy",
    ),
    pytest.param(  # the Responses API wording (as pi-mono's overflow patterns document it)
        400,
        openai("Your input exceeds the context window of this model. Please adjust your input."),
        None,
        None,
        id="openai-responses",
    ),
    # --- Anthropic ---------------------------------------------------------------------------
    pytest.param(  # anthropics/claude-code#12186
        400,
        anthropic("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"),
        200_000,
        208_310,
        id="anthropic",
    ),
    pytest.param(  # docker/docker-agent#569: input and max_tokens together over the window
        400,
        anthropic(
            "invalid_request_error",
            "input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, "
            "decrease input length or `max_tokens` and try again",
        ),
        200_000,
        178_959,
        id="anthropic-max-tokens",
    ),
    pytest.param(  # anthropics/anthropic-sdk-python#938: bytes, not tokens; nothing stated
        413,
        anthropic("request_too_large", "Request exceeds the maximum size"),
        None,
        None,
        id="anthropic-413",
    ),
    pytest.param(  # anthropics/claude-code#6380
        413,
        anthropic("invalid_request_error", "Request size exceeds model context window"),
        None,
        None,
        id="anthropic-413-window",
    ),
    # --- vLLM ----------------------------------------------------------------------------------
    pytest.param(  # vllm-project/vllm#20409
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 16384 tokens. However, you "
            "requested 122946 tokens (112946 in the messages, 10000 in the completion). Please "
            "reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        16_384,
        112_946,
        id="vllm",
    ),
    pytest.param(  # vllm-project/vllm#42474 (vLLM 0.20)
        400,
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, you "
                "requested 65535 output tokens and your prompt contains at least 62466 input "
                "tokens, for a total of at least 128001 tokens.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        },
        128_000,
        62_466,
        id="vllm-0.20",
    ),
    pytest.param(  # vLLM's VLLMValidationError, as hosted_vllm users quote it
        400,
        {
            "error": {
                "message": "You passed 131073 input tokens and requested 0 output tokens. "
                "However, the model's context length is only 131072 tokens, resulting in a "
                "maximum input length of 131072 tokens. Please reduce the length of the input "
                "prompt. (parameter=input_tokens, value=131073)",
                "type": "BadRequestError",
                "param": "input_tokens",
                "code": 400,
            }
        },
        131_072,
        131_073,
        id="vllm-passed",
    ),
    # --- llama.cpp server: the figures are fields of the body ---------------------------------
    pytest.param(  # oobabooga/textgen#7257
        400,
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size. try increasing "
                "the context size or enable context shift",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 14429,
                "n_ctx": 8192,
            }
        },
        8192,
        14_429,
        id="llama.cpp",
    ),
    pytest.param(  # ggml-org/llama.cpp#15780: first shipped with a 500
        500,
        {
            "error": {
                "code": 500,
                "message": "the request exceeds the available context size. try increasing "
                "the context size or enable context shift",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 1407,
                "n_ctx": 256,
            }
        },
        256,
        1407,
        id="llama.cpp-500",
    ),
    pytest.param(  # continuedev/continue#9797: the message alone
        400,
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
            }
        },
        None,
        None,
        id="llama.cpp-text",
    ),
    # --- Ollama ----------------------------------------------------------------------------
    pytest.param(  # ollama/ollama#16800: truncate=false passes on its runner's error as text
        400,
        {
            "error": orjson.dumps(
                {
                    "error": {
                        "code": 400,
                        "message": "request (351 tokens) exceeds the available context size "
                        "(256 tokens), try increasing it",
                        "type": "exceed_context_size_error",
                        "n_prompt_tokens": 351,
                        "n_ctx": 256,
                    }
                }
            ).decode()
        },
        256,
        351,
        id="ollama",
    ),
    pytest.param(  # the figure is the excess, neither the window nor the request
        400,
        {"error": "prompt too long; exceeded max context length by 4096 tokens"},
        None,
        None,
        id="ollama-excess",
    ),
    # --- LM Studio ---------------------------------------------------------------------------
    pytest.param(  # as LM Studio users quote it (Ollama-style {"error": "text"})
        400,
        {
            "error": "The number of tokens to keep from the initial prompt is greater than the "
            "context length (n_keep: 5453>= n_ctx: 4096)."
        },
        4096,
        5453,
        id="lm-studio",
    ),
    pytest.param(  # lmstudio-ai/lmstudio-bug-tracker#546, dyad-sh/dyad#925
        400,
        {
            "error": "Trying to keep the first 14538 tokens when context the overflows. However, "
            "the model is loaded with context length of only 2048 tokens, which is not enough. "
            "Try to load the model with a larger context length, or provide a shorter input"
        },
        2048,
        14_538,
        id="lm-studio-0.3",
    ),
    # --- OpenRouter --------------------------------------------------------------------------
    pytest.param(  # Aider-AI/aider#3721
        400,
        {
            "error": {
                "message": "This endpoint's maximum context length is 131072 tokens. However, "
                "you requested about 141607 tokens (10535 of text input, 131072 in the output). "
                'Please reduce the length of either one, or use the "middle-out" transform to '
                "compress your prompt automatically.",
                "code": 400,
                "metadata": {"provider_name": "Chutes"},
            }
        },
        131_072,
        10_535,
        id="openrouter",
    ),
    # --- Groq, Cerebras ------------------------------------------------------------------------
    pytest.param(  # OpenHands/OpenHands#1902
        400,
        openai("Please reduce the length of the messages or completion."),
        None,
        None,
        id="groq",
    ),
    pytest.param(  # cline/cline#5140
        400,
        openai(
            "Please reduce the length of the messages or completion. Current length is 42328 "
            "while limit is 40000",
            code=None,
        ),
        40_000,
        42_328,
        id="cerebras",
    ),
    # --- Together ------------------------------------------------------------------------------
    pytest.param(  # BerriAI/litellm#4934
        400,
        {
            "error": {
                "message": "Input validation error: `inputs` tokens + `max_new_tokens` must be "
                "<= 4097. Given: 80125 `inputs` tokens and 4096 `max_new_tokens`",
                "type": OPENAI_400,
                "param": "max_tokens",
                "code": None,
            }
        },
        4097,
        80_125,
        id="together",
    ),
    pytest.param(  # Together's current wording (as pi-mono's overflow patterns document it)
        400,
        openai(
            "The input (265330 tokens) is longer than the model's context length (262144 tokens).",
            code=None,
        ),
        262_144,
        265_330,
        id="together-current",
    ),
    # --- Mistral ---------------------------------------------------------------------------------
    pytest.param(  # as Mistral's SDK surfaces it (code 3051)
        400,
        {
            "object": "error",
            "message": "Prompt contains 170397 tokens and 0 draft tokens, too large for model "
            "with 131072 maximum context length",
            "type": "invalid_request_invalid_args",
            "param": None,
            "code": "3051",
        },
        131_072,
        170_397,
        id="mistral",
    ),
    # --- DeepSeek (its code is not context_length_exceeded) -------------------------------------
    pytest.param(  # FoundationAgents/OpenManus#79
        400,
        openai(
            "This model's maximum context length is 65536 tokens. However, you requested 66343 "
            "tokens (62247 in the messages, 4096 in the completion). Please reduce the length "
            "of the messages or completion.",
            code="invalid_request_error",
        ),
        65_536,
        62_247,
        id="deepseek",
    ),
    # --- Gemini, xAI ----------------------------------------------------------------------------
    pytest.param(  # google-gemini/gemini-cli#6678: a one-item list
        400,
        [
            {
                "error": {
                    "code": 400,
                    "message": "The input token count (1200293) exceeds the maximum number of "
                    "tokens allowed (1048576).",
                    "status": "INVALID_ARGUMENT",
                }
            }
        ],
        1_048_576,
        1_200_293,
        id="gemini",
    ),
    pytest.param(  # xAI (as pi-mono's overflow patterns document it)
        400,
        openai(
            "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
            code=None,
        ),
        131_072,
        537_812,
        id="xai",
    ),
]


@pytest.mark.parametrize(("status", "body", "limit", "requested"), CASES)
def test_a_context_error_is_recognised_with_the_figures_it_states(
    status: int, body: object, limit: int | None, requested: int | None
) -> None:
    error = error_from_response(status, httpx.Headers(), orjson.dumps(body), "p")
    assert isinstance(error, ContextTooLong), error
    assert (error.limit, error.requested) == (limit, requested)
    assert not error.retryable


def test_fields_of_the_body_win_over_the_message() -> None:
    message = "request (351 tokens) exceeds the available context size (256 tokens)"
    error = classify(
        provider="p", status=400, kind="exceed_context_size_error", code=None, message=message,
        limit=4096, requested=5000,
    )  # fmt: skip
    assert isinstance(error, ContextTooLong)
    assert (error.limit, error.requested) == (4096, 5000)


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (429, "Rate limit reached for gpt-4o: Limit 30000, Requested 50000 tokens per min"),
        (400, "max_tokens: 10000 > 4096, which is the maximum allowed number of output tokens"),
    ],
)
def test_errors_that_only_sound_like_it_are_not_context_errors(status: int, message: str) -> None:
    error = classify(provider="p", status=status, kind=None, code=None, message=message)
    assert not isinstance(error, ContextTooLong)


# --- through the adapters, against a server on 127.0.0.1 -----------------------------------

OK_EVENTS = {"openai": openai_text("fine"), "anthropic": anthropic_text("fine")}


def make_model(
    adapter: str, server: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> Model:
    http = http_options(client, sleeps)
    if adapter == "anthropic":
        endpoint = AnthropicEndpoint(model="claude-test", api_key="sk-ant", base_url=server.url)
        return AnthropicModel(endpoint, http)
    return OpenAIChatModel(
        OpenAIEndpoint(provider="p", model="m", base_url=server.url + "/v1", api_key="sk"), http
    )


async def complete(model: Model, chars: int) -> AssistantMessage:
    request = ModelRequest(messages=(UserMessage(content="x" * chars),))
    async with model.stream(request) as events:
        return await collect(events)


@pytest.mark.parametrize(
    ("adapter", "shape", "figures"),
    [
        ("openai", "openai", (4096, 5000)),
        ("openai", "vllm", (4096, 5000)),
        ("openai", "llama.cpp", (4096, 5000)),
        ("anthropic", "anthropic", (4096, 5000)),
        ("anthropic", "anthropic-413", (None, None)),  # it states neither
    ],
)
async def test_an_adapter_raises_context_too_long_with_its_figures_and_never_retries(
    server: LoopbackServer,
    client: httpx.AsyncClient,
    sleeps: Sleeps,
    adapter: str,
    shape: ContextShape,
    figures: tuple[int | None, int | None],
) -> None:
    server.add(context_too_long(shape, limit=4096, requested=5000))
    with pytest.raises(ContextTooLong) as info:
        await complete(make_model(adapter, server, client, sleeps), chars=10)
    assert (info.value.limit, info.value.requested) == figures
    assert len(server.requests) == 1  # not retried: the same request would fail the same way
    assert sleeps.calls == []


@pytest.mark.parametrize(
    ("adapter", "shape"),
    [("openai", "openai"), ("openai", "llama.cpp"), ("anthropic", "anthropic")],
)
async def test_a_server_with_a_window_refuses_only_the_requests_that_do_not_fit(
    server: LoopbackServer,
    client: httpx.AsyncClient,
    sleeps: Sleeps,
    adapter: str,
    shape: ContextShape,
) -> None:
    server.window_chars, server.window_shape = 400, shape  # 100 tokens at 4 characters each
    server.add(Reply.sse(OK_EVENTS[adapter]))
    model = make_model(adapter, server, client, sleeps)
    with pytest.raises(ContextTooLong) as info:
        await complete(model, chars=2000)
    assert (info.value.limit, info.value.requested) == (100, 500)
    assert (await complete(model, chars=400)).text == "fine"  # the scripted reply was kept
    assert server.refused == server.requests[:1]
    assert len(server.requests) == 2
