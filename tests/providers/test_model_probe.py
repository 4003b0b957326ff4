"""`orchestrator models test SPEC` against loopback servers in OpenAI's and Anthropic's
shapes: a working setup, and one clear line for each way a setup fails."""

from __future__ import annotations

import socket
from typing import Any, Literal

import orjson
import pytest
import trio
from provider_server import LoopbackServer, Reply
from sdk_types import (
    MESSAGE_STOP,
    anthropic_error,
    anthropic_text,
    block_delta,
    block_start,
    block_stop,
    message_delta,
    message_start,
    openai_text,
    openai_tool_call,
)

from orchestrator.cli.model_probe import TOOL, format_test, probe
from orchestrator.config import Config
from tests.scenes import orchestrator_on_trio

Shape = Literal["openai", "anthropic"]
KEY = "sk-models-test-FAKE-0123456789"


def spec_env(shape: Shape, url: str) -> tuple[str, dict[str, str]]:
    if shape == "openai":
        return f"openai-compatible:test-model@{url}/v1", {"OPENAI_API_KEY": KEY}
    return "anthropic:claude-sonnet-4-5", {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": url}


def tool_reply(shape: Shape) -> Reply:
    arguments = '{"word": "ready"}'
    if shape == "openai":
        return Reply.sse(openai_tool_call("call_1", TOOL.name, arguments, usage=(40, 9)))
    use = {"type": "tool_use", "id": "toolu_1", "name": TOOL.name, "input": {}}
    return Reply.sse(
        [
            message_start(input_tokens=40, cache_write=12),
            block_start(0, use),
            block_delta(0, {"type": "input_json_delta", "partial_json": arguments}),
            block_stop(0),
            message_delta("tool_use", 9),
            MESSAGE_STOP,
        ]
    )


async def check(server: LoopbackServer, shape: Shape, within: float = 30) -> dict[str, Any]:
    spec, env = spec_env(shape, server.url)
    return await probe(spec, env, Config(), within)


@pytest.mark.parametrize("shape", ["openai", "anthropic"])
async def test_a_working_model_calls_the_tool_and_streams_its_usage(
    server: LoopbackServer, shape: Shape
) -> None:
    server.add(tool_reply(shape))
    report = await check(server, shape)
    assert report["failure"] is None
    assert report["ok"] is True
    assert report["tool_call"] is True
    assert report["usage"] == {"input_tokens": 40, "output_tokens": 9}
    assert report["cache"] == {"read": 0, "write": 12 if shape == "anthropic" else 0}
    assert 0 <= report["first_event_s"] <= report["total_s"]
    (request,) = server.requests
    body = request.json()
    assert body["stream"] is True
    assert [t.get("name") or t["function"]["name"] for t in body["tools"]] == [TOOL.name]
    text = format_test(report)
    assert text.splitlines()[-1] == "ok"
    assert "tool call  yes" in text
    assert "usage      in the stream: 40 input, 9 output tokens" in text
    # The known models' table prices claude-sonnet-4-5; a model of one's own is unknown.
    assert ("input $3" in text) == (shape == "anthropic")


async def test_usage_missing_from_the_stream_is_said(server: LoopbackServer) -> None:
    server.add(Reply.sse(openai_tool_call("call_1", TOOL.name, '{"word": "ready"}')))
    report = await check(server, "openai")
    assert report["ok"] is True
    assert report["usage"] is None
    assert "usage      not in the stream" in format_test(report)


OPENAI_FAILURES: dict[str, Reply] = {
    "wrong_key": Reply.json(
        401,
        {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                   "code": "invalid_api_key"}},
    ),
    "unknown_model": Reply.json(
        404,
        {"error": {"message": "The model `test-model` does not exist", "type":
                   "invalid_request_error", "code": "model_not_found"}},
    ),
    # vLLM started without a tool parser, in its own words.
    "no_tools": Reply.json(
        400,
        {"object": "error", "type": "BadRequestError", "code": 400, "message":
         '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'},
    ),
    "server_error": Reply.json(500, {"error": {"message": "boom", "type": "server_error"}}),
    "no_tool_call": Reply.sse(openai_text("ready", usage=(40, 2))),
}  # fmt: skip
ANTHROPIC_FAILURES: dict[str, Reply] = {
    "wrong_key": Reply.json(401, anthropic_error("authentication_error", "invalid x-api-key")),
    "unknown_model": Reply.json(404, anthropic_error("not_found_error", "model: test-model")),
    "no_tools": Reply.json(
        400, anthropic_error("invalid_request_error", "tools.0.input_schema: Field required")
    ),
    "server_error": Reply.json(500, anthropic_error("api_error", "Internal server error")),
    "no_tool_call": Reply.sse(anthropic_text("ready")),
}
CAUSES = {
    "wrong_key": "the API key was refused",
    "unknown_model": "unknown model",
    "no_tools": "does not take tools",
    "server_error": "the server failed",
    "no_tool_call": "without calling the tool",
}


@pytest.mark.parametrize(
    ("shape", "kind", "reply"),
    [("openai", kind, reply) for kind, reply in OPENAI_FAILURES.items()]
    + [("anthropic", kind, reply) for kind, reply in ANTHROPIC_FAILURES.items()],
)
async def test_each_failure_is_one_line_naming_its_cause(
    server: LoopbackServer, shape: Shape, kind: str, reply: Reply
) -> None:
    server.add(reply)
    report = await check(server, shape)
    assert report["ok"] is False
    assert report["failure"]["kind"] == kind
    assert CAUSES[kind] in report["failure"]["message"]
    assert len(server.requests) == 1  # nothing retried: the first answer is reported
    failed = [line for line in format_test(report).splitlines() if line.startswith("FAILED")]
    assert failed == [f"FAILED     {kind}: {report['failure']['message']}"]
    assert KEY not in format_test(report)
    if kind == "wrong_key":
        variable = "OPENAI_API_KEY" if shape == "openai" else "ANTHROPIC_API_KEY"
        assert f"(check {variable})" in report["failure"]["message"]


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on: one just given up."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.mark.parametrize("shape", ["openai", "anthropic"])
async def test_a_wrong_url_names_the_url(shape: Shape) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    spec, env = spec_env(shape, url)
    report = await probe(spec, env, Config(), 30)
    assert report["failure"]["kind"] == "unreachable"
    assert report["failure"]["message"].startswith(f"cannot reach {url}")


@pytest.mark.parametrize("shape", ["openai", "anthropic"])
async def test_a_server_that_never_answers_times_out(
    server: LoopbackServer, shape: Shape, autojump_clock: trio.abc.Clock
) -> None:
    server.add(Reply.stall_before_headers())
    report = await check(server, shape, within=20)
    assert report["failure"] == {
        "kind": "timeout",
        "message": "no complete answer within 20 s (--timeout)",
    }


async def test_a_missing_key_is_said_before_any_request() -> None:
    report = await probe("openai:gpt-4.1", {}, Config(), 30)
    assert report["failure"]["kind"] == "config"
    assert "OPENAI_API_KEY is not set" in report["failure"]["message"]


async def models_test(server: LoopbackServer, shape: Shape, *extra: str) -> tuple[int, str]:
    spec, env = spec_env(shape, server.url)
    result = await orchestrator_on_trio("models", "test", spec, *extra, **env)
    assert result.stderr == b""
    assert KEY.encode() not in result.stdout
    return result.returncode, result.stdout.decode()


@pytest.mark.parametrize("shape", ["openai", "anthropic"])
async def test_the_command_exits_0_when_the_model_works(
    server: LoopbackServer, shape: Shape
) -> None:
    server.add(tool_reply(shape), tool_reply(shape))
    code, text = await models_test(server, shape)
    assert code == 0
    assert text.splitlines()[-1] == "ok"
    code, text = await models_test(server, shape, "--json", "--timeout", "30")
    assert code == 0
    assert orjson.loads(text)["tool_call"] is True


async def test_the_command_exits_1_with_the_failure(server: LoopbackServer) -> None:
    server.add(OPENAI_FAILURES["wrong_key"], OPENAI_FAILURES["unknown_model"])
    code, text = await models_test(server, "openai")
    assert code == 1
    assert text.splitlines()[-1].startswith("FAILED     wrong_key: the API key was refused")
    code, text = await models_test(server, "openai", "--json")
    assert code == 1
    assert orjson.loads(text)["failure"]["kind"] == "unknown_model"
