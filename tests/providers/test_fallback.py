"""Fallback chains (models/fallback.py): an Anthropic model and an OpenAI-compatible one,
each on its own loopback server, the second answering what the first cannot."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import orjson
import pytest
import trio
from adapter_setup import http_options
from provider_server import LoopbackServer, Reply, Sleeps
from sdk_types import anthropic_error, anthropic_text, openai_text, openai_tool_call

from orchestrator import ModelRequest, UserMessage
from orchestrator.config import parse_config
from orchestrator.errors import ConfigError, ContextTooLong, ModelError, ProviderFatal
from orchestrator.messages import AssistantMessage
from orchestrator.models import ModelEvent, TextDelta
from orchestrator.models.anthropic import AnthropicEndpoint, AnthropicModel
from orchestrator.models.base import ModelChosen, Waiting, collect
from orchestrator.models.fallback import Fallback
from orchestrator.models.http import RetryPolicy
from orchestrator.models.openai import OpenAIChatModel, OpenAIEndpoint
from orchestrator.models.resolve import resolve_model
from tests.scenes import orchestrator_on_trio, run_flags

REQUEST = ModelRequest(messages=(UserMessage(content="hi"),))


@pytest.fixture
async def second(nursery: trio.Nursery) -> LoopbackServer:
    srv = LoopbackServer()
    await nursery.start(srv.serve)
    return srv


TWO_RETRIES = RetryPolicy(max_retries=2)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def chain(
    first: LoopbackServer,
    second: LoopbackServer,
    client: httpx.AsyncClient,
    sleeps: Sleeps,
    clock: Clock | None = None,
) -> Fallback:
    claude = AnthropicModel(
        AnthropicEndpoint(model="claude-test", api_key="sk-ant-test", base_url=first.url),
        http_options(client, sleeps, TWO_RETRIES),
    )
    gpt = OpenAIChatModel(
        OpenAIEndpoint(provider="openai", model="gpt-test", base_url=f"{second.url}/v1"),
        http_options(client, sleeps, TWO_RETRIES),
    )
    return Fallback([claude, gpt], cooldown=300, clock=clock or Clock())


async def ask(model: Fallback) -> tuple[AssistantMessage, list[ModelEvent]]:
    seen: list[ModelEvent] = []

    async def kept(events: AsyncIterator[ModelEvent]) -> AsyncIterator[ModelEvent]:
        async for event in events:
            seen.append(event)
            yield event

    async with model.stream(REQUEST) as events:
        reply = await collect(kept(events))
    return reply, seen


def chosen(events: list[ModelEvent]) -> list[ModelChosen]:
    return [e for e in events if isinstance(e, ModelChosen)]


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (402, anthropic_error("billing_error", "Your credit balance is too low")),
        (401, anthropic_error("authentication_error", "invalid x-api-key")),
        (404, anthropic_error("not_found_error", "model: claude-test")),
        (400, anthropic_error("invalid_request_error", "prompt is too long: 250000 tokens")),
        (529, anthropic_error("overloaded_error", "Overloaded")),
    ],
    ids=["quota", "auth", "not-found", "too-long", "overloaded-after-retries"],
)
async def test_the_next_model_answers_what_the_first_cannot(
    server: LoopbackServer,
    second: LoopbackServer,
    client: httpx.AsyncClient,
    sleeps: Sleeps,
    status: int,
    body: dict[str, object],
) -> None:
    tries = 3 if status == 529 else 1  # an overload is retried on the same model first
    server.add(*(Reply.json(status, body) for _ in range(tries)))
    second.add(Reply.sse(openai_text("from gpt")))
    model = chain(server, second, client, sleeps)

    reply, events = await ask(model)

    assert reply.text == "from gpt"
    (switch,) = chosen(events)
    assert (switch.model, switch.instead_of) == ("openai:gpt-test", "anthropic:claude-test")
    assert switch.chain == "anthropic:claude-test,openai:gpt-test"
    assert str(status) in switch.why
    assert len(server.requests) == tries
    # It stays on the model that answered: the next call goes there first.
    second.add(Reply.sse(openai_text("again")))
    reply, events = await ask(model)
    assert reply.text == "again"
    assert [(c.model, c.instead_of) for c in chosen(events)] == [("openai:gpt-test", "")]
    assert len(server.requests) == tries
    assert model.name == "openai:gpt-test"


async def test_a_transient_error_retries_the_same_model_and_never_moves(
    server: LoopbackServer, second: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(
        Reply.json(529, anthropic_error("overloaded_error", "Overloaded")),
        Reply.json(500, anthropic_error("api_error", "Internal")),
        Reply.sse(anthropic_text("from claude")),
    )
    model = chain(server, second, client, sleeps)

    reply, events = await ask(model)

    assert reply.text == "from claude"
    assert [(c.model, c.instead_of) for c in chosen(events)] == [("anthropic:claude-test", "")]
    assert second.requests == []
    # Its waits reached the caller as they began, before the reply.
    assert [type(e) for e in events[:2]] == [Waiting, Waiting]


async def test_the_chain_goes_back_to_its_first_model_after_the_cooldown(
    server: LoopbackServer, second: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    clock = Clock()
    server.add(Reply.json(402, anthropic_error("billing_error", "Your credit balance is too low")))
    second.add(Reply.sse(openai_text("one")), Reply.sse(openai_text("two")))
    model = chain(server, second, client, sleeps, clock)
    await ask(model)

    clock.now += 299
    reply, _ = await ask(model)
    assert reply.text == "two"
    assert len(server.requests) == 1

    clock.now += 1
    server.add(Reply.sse(anthropic_text("claude is back")))
    reply, events = await ask(model)
    assert reply.text == "claude is back"
    (back,) = chosen(events)
    assert (back.model, back.instead_of) == ("anthropic:claude-test", "openai:gpt-test")
    assert "back to the first model" in back.why
    assert back.at == clock.now


async def test_a_restored_chain_goes_on_with_the_journaled_model(
    server: LoopbackServer, second: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    clock = Clock()
    model = chain(server, second, client, sleeps, clock)
    model.restore("openai:gpt-test", at=clock.now - 100)
    second.add(Reply.sse(openai_text("still gpt")))
    reply, _ = await ask(model)
    assert reply.text == "still gpt"
    assert server.requests == []

    model.restore("not-in-the-chain:x", at=clock.now)  # a config changed since: ignored
    assert model.name == "openai:gpt-test"


async def test_every_model_failing_fails_with_the_first_error_naming_the_others(
    server: LoopbackServer, second: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(Reply.json(402, anthropic_error("billing_error", "credit balance is too low")))
    refused = {"type": "invalid_request_error", "code": "invalid_api_key", "message": "bad key"}
    second.add(Reply.json(401, {"error": refused}))
    model = chain(server, second, client, sleeps)

    with pytest.raises(ProviderFatal) as failed:
        await ask(model)

    assert "credit balance is too low" in str(failed.value)
    assert "openai:gpt-test: HTTP 401: bad key" in str(failed.value)
    assert model.name == "anthropic:claude-test"  # it did not move


async def test_too_long_for_every_model_fails_as_too_long_so_the_turn_compacts(
    server: LoopbackServer, second: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    server.add(Reply.json(402, anthropic_error("billing_error", "credit balance is too low")))
    second.add(
        Reply.json(
            400,
            {
                "error": {
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                    "message": "This model's maximum context length is 8192 tokens. However, "
                    "your messages resulted in 9000 tokens.",
                }
            },
        )
    )
    model = chain(server, second, client, sleeps)

    with pytest.raises(ContextTooLong) as failed:
        await ask(model)

    assert failed.value.limit == 8192
    assert "anthropic:claude-test" in str(failed.value)


async def test_a_reply_cut_after_it_began_is_not_the_chain_s_to_answer(
    server: LoopbackServer, second: LoopbackServer, client: httpx.AsyncClient, sleeps: Sleeps
) -> None:
    events = anthropic_text("half a reply")
    server.add(Reply.sse(events[:3], tail=[]))  # ends after the first text, no stop
    model = chain(server, second, client, sleeps)

    texts: list[str] = []

    async def read() -> None:
        async with model.stream(REQUEST) as stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    texts.append(event.text)

    with pytest.raises(ModelError) as cut:
        await read()

    assert texts == ["half a reply"]
    assert cut.value.retryable
    assert second.requests == []
    assert model.name == "anthropic:claude-test"


def test_a_chain_from_config_and_its_errors() -> None:
    config = parse_config(
        'model = ["anthropic:claude-a", "openai:gpt-b"]\n[agents.worker]\ncooldown = 60\n'
    )
    env = {"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}
    made = resolve_model(config.model, env=env, config=config, role="worker")
    assert isinstance(made, Fallback)
    assert made.spec == "anthropic:claude-a,openai:gpt-b"
    assert made.cooldown == 60
    assert isinstance(resolve_model(config.model, env=env, config=config), Fallback)

    with pytest.raises(ConfigError, match="names a model twice"):
        resolve_model("openai:a,openai:a", env=env)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        resolve_model("anthropic:a,openai:b", env={"ANTHROPIC_API_KEY": "k"})
    for bad in ('model = ["anthropic:a"]', 'model = ["a:b", ""]', "model = [1, 2]"):
        with pytest.raises(ConfigError, match="two or more model specs"):
            parse_config(bad)


async def test_a_session_falls_back_journals_it_and_resumes_on_the_journaled_model(
    server: LoopbackServer, second: LoopbackServer, tmp_path: Path
) -> None:
    server.add(Reply.json(402, anthropic_error("billing_error", "Your credit balance is too low")))
    second.add(
        Reply.sse(openai_tool_call("call_1", "write_file", '{"path": "a.txt", "content": "a"}')),
        Reply.sse(openai_text("Wrote a.txt.")),
        Reply.sse(openai_text("Still here.")),
    )
    workspace, sessions = tmp_path / "ws", tmp_path / "sessions"
    workspace.mkdir()
    env = {
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ANTHROPIC_BASE_URL": server.url,
        "OPENAI_API_KEY": "sk-test",
    }
    spec = f"anthropic:claude-test,openai:gpt-test@{second.url}/v1"
    where = run_flags(workspace, sessions)

    ran = await orchestrator_on_trio("run", "Write a.txt", "--model", spec, *where, **env)

    assert ran.returncode == 0, ran.stderr.decode()
    assert (workspace / "a.txt").read_text() == "a"
    out = ran.stdout.decode()
    assert "openai:gpt-test answers instead of anthropic:claude-test" in out
    assert "credit balance is too low" in out
    (journal,) = sessions.rglob("journal.jsonl")
    records = [orjson.loads(line) for line in journal.read_bytes().splitlines()]
    (switch,) = [r for r in records if r["k"] == "model_switched"]
    assert switch["model"] == "openai:gpt-test"
    assert switch["instead_of"] == "anthropic:claude-test"
    assert switch["chain"] == "anthropic:claude-test,openai:gpt-test"  # the models' names
    replies = [r["model"] for r in records if r["k"] == "assistant_replied"]
    assert replies == ["openai:gpt-test", "openai:gpt-test"]

    session_id = journal.parent.name
    resumed = await orchestrator_on_trio(
        "resume", session_id, "--message", "Anything else?", *where[2:], **env
    )

    assert resumed.returncode == 0, resumed.stderr.decode()
    assert "Still here." in resumed.stdout.decode()
    assert len(server.requests) == 1  # the resume went on with gpt, within the cool-down
