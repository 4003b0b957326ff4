"""`orchestrator models test SPEC`: one small streamed request to a model, with one tool
offered and the model asked to call it, so a new setup is known to work before a long
run. It reports the latency (first event, total), whether the tool call came back,
whether usage arrived in the stream and what it said of the prompt cache; a failure is
one line that names its cause (a wrong key, a wrong URL, an unknown model, no tool
support, a timeout). Nothing is retried: the first answer is the one reported."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any, TextIO

import orjson
import trio

from orchestrator.config import Config
from orchestrator.errors import (
    ConfigError,
    ModelError,
    ProviderAuthError,
    ProviderBadRequest,
    ProviderRateLimited,
    ProviderTransient,
)
from orchestrator.messages import SystemMessage, Usage, UserMessage
from orchestrator.models.base import (
    ModelRequest,
    StreamEnded,
    TextDelta,
    ThinkingDelta,
    ThinkingDone,
    ToolCallReady,
    ToolSpec,
    UsageReported,
)
from orchestrator.models.resolve import provider_info, resolve_model
from orchestrator.prices.cost import find_price

TOOL = ToolSpec(
    name="report_ready",
    description="Report that the model can call tools. Call it exactly once.",
    parameters={
        "type": "object",
        "properties": {"word": {"type": "string", "description": "the word to report"}},
        "required": ["word"],
    },
)
REQUEST = ModelRequest(
    messages=(
        SystemMessage(content="You are checking that tool calls work. Answer only by tool."),
        UserMessage(content='Call the tool report_ready with word "ready". Write no text.'),
    ),
    tools=(TOOL,),
    role="models-test",
    max_tokens=1024,  # room for a reasoning model's thinking before its call
)


def run_model_test(
    spec: str,
    env: Mapping[str, str],
    config: Config,
    *,
    timeout: float,
    as_json: bool,
    out: TextIO | None = None,
) -> int:
    """Test `spec` and print the report; 0 if the model answered with the tool call."""
    out = out or sys.stdout
    report = trio.run(probe, spec, env, config, timeout)
    if as_json:
        out.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        out.write(format_test(report))
    return 0 if report["ok"] else 1


async def probe(spec: str, env: Mapping[str, str], config: Config, within: float) -> dict[str, Any]:
    """Send the one request, giving up after `within` seconds, and say what came back,
    as plain data."""
    report: dict[str, Any] = {
        "model": spec,
        "ok": False,
        "first_event_s": None,
        "total_s": None,
        "tool_call": False,
        "text": "",
        "usage": None,
        "cache": None,
        "price": _price(config, spec),
        "failure": None,
    }
    try:
        model = resolve_model(spec, env=env, config=_without_retries(config, spec))
    except ConfigError as exc:
        report["failure"] = {"kind": "config", "message": str(exc)}
        return report
    started = trio.current_time()
    usage: Usage | None = None
    text: list[str] = []
    try:
        with trio.fail_after(within):
            async with model.stream(REQUEST) as events:
                async for event in events:
                    if report["first_event_s"] is None:
                        report["first_event_s"] = round(trio.current_time() - started, 3)
                    match event:
                        case ToolCallReady(call=call):
                            report["tool_call"] = report["tool_call"] or call.name == TOOL.name
                        case UsageReported(usage=used):
                            usage = used if usage is None else usage + used
                        case TextDelta(text=piece):
                            text.append(piece)
                        case StreamEnded() | ThinkingDelta() | ThinkingDone():
                            pass
    except trio.TooSlowError:
        line = f"no complete answer within {within:g} s (--timeout)"
        report["failure"] = {"kind": "timeout", "message": line}
        return report
    except ModelError as exc:
        report["failure"] = _failure(exc, spec, env, config)
        return report
    report["total_s"] = round(trio.current_time() - started, 3)
    report["text"] = "".join(text)[:200]
    if usage is not None:
        report["usage"] = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
        report["cache"] = {"read": usage.cache_read_tokens, "write": usage.cache_write_tokens}
    if not report["tool_call"]:
        line = "the model answered without calling the tool it was asked to call"
        report["failure"] = {"kind": "no_tool_call", "message": line}
    report["ok"] = report["failure"] is None
    return report


def _without_retries(config: Config, spec: str) -> Config:
    """`config` with no retries for the spec's provider: a test reports the first answer
    (a refused connection or a 5xx at once, not after a minute of backoff)."""
    name = spec.partition(":")[0]
    settings = config.provider(name).model_copy(update={"max_retries": 0})
    return config.model_copy(update={"providers": {**config.providers, name: settings}})


def _failure(exc: ModelError, spec: str, env: Mapping[str, str], config: Config) -> dict[str, str]:
    """What went wrong, as a kind and one line that names the cause."""
    said, status = exc.message, exc.status
    lowered = said.lower()
    kind: str
    if isinstance(exc, ProviderAuthError):
        kind, cause = "wrong_key", f"the API key was refused{_key_named(spec, env, config)}"
    elif isinstance(exc, ProviderRateLimited):
        kind, cause = "rate_limited", "rate limited or overloaded"
    elif isinstance(exc, ProviderBadRequest) and "tool" in lowered:
        kind, cause = "no_tools", "the model or server does not take tools"
    elif isinstance(exc, ProviderBadRequest) and (
        status == 404
        or exc.tags & _MODEL_NOT_FOUND
        or ("model" in lowered and _NOT_FOUND.search(lowered))
    ):
        kind, cause = "unknown_model", f"unknown model {spec.partition(':')[2].split('@')[0]!r}"
    elif isinstance(exc, ProviderTransient) and said.startswith("connection failed"):
        kind, cause = "unreachable", f"cannot reach {_url(spec, env, config)} (wrong URL?)"
    elif isinstance(exc, ProviderTransient) and said.startswith(_TIMED_OUT):
        kind, cause = "timeout", "the provider did not answer in time"
    elif isinstance(exc, ProviderTransient):
        kind, cause = "server_error", "the server failed"
    elif isinstance(exc, ProviderBadRequest):
        kind, cause = "bad_request", "the request was refused"
    else:
        kind, cause = "failed", "the call failed"
    return {"kind": kind, "message": f"{cause}: {said}"}


_TIMED_OUT = ("no response within", "no data for", "stream stalled")
_MODEL_NOT_FOUND = frozenset({"model_not_found", "not_found_error", "not_found"})
_NOT_FOUND = re.compile(
    r"not (?:be )?found|does not exist|unknown model|no such model|invalid model"
)


def _key_named(spec: str, env: Mapping[str, str], config: Config) -> str:
    try:
        info = provider_info(spec.partition(":")[0], env=env, config=config)
    except ConfigError:
        return ""
    return f" (check {info.key_env})" if info.key_env else " (the server wants a key)"


def _url(spec: str, env: Mapping[str, str], config: Config) -> str:
    prefix, _, rest = spec.partition(":")
    _, at, given = rest.partition("@")
    if at:
        return given
    try:
        return provider_info(prefix, env=env, config=config).base_url or "the server"
    except ConfigError:
        return "the server"


def _price(config: Config, spec: str) -> dict[str, float] | None:
    price = find_price(config.prices, spec)
    return None if price is None else price.model_dump(exclude_none=True)


def format_test(report: dict[str, Any]) -> str:
    lines = [f"model      {report['model']}"]
    failure = report["failure"]
    if report["total_s"] is not None:
        first = report["first_event_s"]
        first_text = "no events" if first is None else f"first event {first:.2f} s"
        lines.append(f"latency    {first_text}, total {report['total_s']:.2f} s")
        lines.append("tool call  " + ("yes" if report["tool_call"] else "no"))
        usage, cache = report["usage"], report["cache"]
        if usage is None:
            lines.append("usage      not in the stream: cost and token budgets cannot count")
        else:
            lines.append(
                f"usage      in the stream: {usage['input_tokens']} input, "
                f"{usage['output_tokens']} output tokens"
            )
        if cache is not None and (cache["read"] or cache["write"]):
            lines.append(f"caching    {cache['read']} tokens read, {cache['write']} written")
        elif cache is not None:
            lines.append("caching    none reported (prompts under 1,024 tokens are not cached)")
    price = report["price"]
    if price is not None:
        figures = ", ".join(f"{name} ${value:g}" for name, value in price.items())
        lines.append(f"price      {figures} per million tokens")
    else:
        lines.append("price      unknown: set [prices] to count its cost")
    if failure is None:
        lines.append("ok")
    else:
        lines.append(f"FAILED     {failure['kind']}: {failure['message']}")
    return "\n".join(lines) + "\n"
