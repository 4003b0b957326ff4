"""A team's model played by loopback servers that fail on purpose: the chaos test's and
its benchmark's.

`TeamModel` answers each request from what it holds, in either wire form (Anthropic
Messages or OpenAI chat completions), as a model playing the CLI's team would: the main
agent delegates `files` tasks at once, waits until every file is written, then says so;
each worker writes its file and completes. `Chaos` turns a seeded share of requests into
failures a real provider sends: a 429 with and without `retry-after`, a 500, an overload
(529, or 503 from OpenAI), a quota error (Anthropic's server only, so a call can always
move on to the OpenAI model), a stream cut after part of the reply, a reply cut at its
output limit (`max_tokens`, `length`: its text, or its last call's arguments, half
there). At most two failures in a row per server, so every call ends well within the
retry budget of its model or the next one of the chain, and within the two recoveries of
a reply cut at its limit.
"""

from __future__ import annotations

import random
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson
from provider_server import Drop, LoopbackServer, Recorded, Reply, awkward_split
from sdk_types import (
    anthropic_error,
    anthropic_text,
    anthropic_tool_uses,
    openai_text,
    openai_tool_calls,
)

from orchestrator.agent.recovery import GO_ON
from tests.scenes import orchestrator_on_trio, run_flags

Wire = Literal["anthropic", "openai"]
GOAL = "Write the chaos files, one task each."
MARK = "CHAOS-FILE"
FAULTS = ("limit", "quota", "cut", "429", "500", "overloaded", "429-bare")


def task_prompt(name: str, content: str) -> str:
    return f"{MARK} {name} {content!r}: write this file with exactly this content, then complete."


@dataclass(frozen=True)
class Seen:
    """What the model reads of a request: its first user text, the names of the tools it
    called so far, in order, and, for a request to go on with a reply cut at its output
    limit (agent/recovery.py), the text so far."""

    first_user: str
    called: tuple[str, ...]
    going_on: str | None = None


def seen(body: dict[str, Any], wire: Wire) -> Seen:
    texts: list[tuple[str, str]] = []  # (role, text) of each message
    called: list[str] = []
    for message in body["messages"]:
        content = message.get("content")
        text = content if isinstance(content, str) else _block_text(content)
        texts.append((message["role"], text))
        if message["role"] == "assistant":
            if wire == "openai":
                called += [c["function"]["name"] for c in message.get("tool_calls") or []]
            elif isinstance(content, list):
                called += [b["name"] for b in content if b.get("type") == "tool_use"]
    first = next(text for role, text in texts if role == "user")
    going_on = None
    if len(texts) >= 2 and texts[-1][1].endswith(GO_ON) and texts[-2][0] == "assistant":
        going_on = texts[-2][1]
    return Seen(first, tuple(called), going_on)


def _block_text(content: object) -> str:
    if not isinstance(content, list):
        return ""
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


Call = tuple[str, str, dict[str, Any]]  # (id, tool, arguments)


@dataclass
class TeamModel:
    """The replies of a team's model (see the module's doc)."""

    workspace: Path
    files: int = 8

    def expected(self) -> dict[str, str]:
        return {f"chaos{n}.txt": f"content {n}\n" for n in range(1, self.files + 1)}

    def answer(self, request: Seen) -> str | list[Call]:
        if MARK in request.first_user:
            name = request.first_user.split(MARK, 1)[1].split()[0]
            ident = name.removesuffix(".txt")
            if not request.called:
                body = self.expected()[name]
                return [(f"w_{ident}_1", "write_file", {"path": name, "content": body})]
            return [(f"w_{ident}_2", "complete", {"summary": f"wrote {name}"})]
        if not request.called:
            return [
                (
                    f"m_delegate_{n}",
                    "delegate",
                    {
                        "description": f"write {name}",
                        "prompt": task_prompt(name, content),
                        "write_scope": [name],
                    },
                )
                for n, (name, content) in enumerate(self.expected().items(), 1)
            ]
        if all((self.workspace / name).is_file() for name in self.expected()):
            return "Every chaos file is written."
        return [(f"m_wait_{len(request.called)}", "wait_tasks", {"timeout": 30})]


def reply_events(answer: str | list[Call], wire: Wire, *, limit: bool = False) -> list[bytes]:
    """The stream of `answer`; `limit`: cut at its output limit, half of its text (or of
    its last call's arguments) there."""
    if isinstance(answer, str):
        if limit:
            return _text_at_limit(answer[: len(answer) // 2], wire)
        return openai_text(answer, usage=(100, 10)) if wire == "openai" else anthropic_text(answer)
    arguments = [orjson.dumps(args).decode() for _, _, args in answer]
    if limit:
        arguments[-1] = arguments[-1][: len(arguments[-1]) // 2]
    calls = [(cid, name, arguments[i]) for i, (cid, name, _) in enumerate(answer)]
    if wire == "openai":
        return openai_tool_calls(calls, usage=(100, 20), finish="length" if limit else "tool_calls")
    stop = "max_tokens" if limit else "tool_use"
    return anthropic_tool_uses(calls, input_tokens=100, output_tokens=20, stop=stop)


def _text_at_limit(text: str, wire: Wire) -> list[bytes]:
    if wire == "openai":
        return openai_text(text, usage=(100, 10), finish="length")
    return anthropic_text(text, input_tokens=100, output_tokens=10, stop="max_tokens")


def fault_reply(fault: str, wire: Wire, whole: list[bytes]) -> Reply:
    anthropic = wire == "anthropic"
    match fault:
        case "429" | "429-bare":
            headers = {"retry-after": "0.5"} if fault == "429" else {}
            limited = {"type": "requests", "code": "rate_limit_exceeded", "message": "slow down"}
            body = (
                anthropic_error("rate_limit_error", "Number of requests exceeds your rate limit")
                if anthropic
                else {"error": limited}
            )
            return Reply.json(429, body, headers)
        case "500":
            body = (
                anthropic_error("api_error", "Internal server error")
                if anthropic
                else {"error": {"type": "server_error", "message": "The server had an error"}}
            )
            return Reply.json(500, body)
        case "overloaded":
            if anthropic:
                return Reply.json(529, anthropic_error("overloaded_error", "Overloaded"))
            body = {"error": {"type": "server_error", "message": "Service unavailable"}}
            return Reply.json(503, body)
        case "quota":
            return Reply.json(
                400, anthropic_error("billing_error", "Your credit balance is too low")
            )
        case "cut":
            data = b"".join(whole)
            pieces = awkward_split(data[: len(data) // 2])
            return Reply(headers={"content-type": "text/event-stream"}, pieces=[*pieces, Drop()])
    raise AssertionError(fault)


@dataclass
class Chaos:
    """Fails `share` of the requests of each server, seeded (see the module's doc)."""

    seed: int = 7
    share: float = 0.3
    faults: Counter[str] = field(default_factory=Counter)
    served: Counter[str] = field(default_factory=Counter)
    _rngs: dict[str, random.Random] = field(default_factory=dict)
    _in_a_row: Counter[str] = field(default_factory=Counter)

    def fault(self, wire: Wire) -> str | None:
        rng = self._rngs.setdefault(wire, random.Random(f"{self.seed}-{wire}"))
        self.served[wire] += 1
        if self._in_a_row[wire] >= 2 or rng.random() >= self.share:
            self._in_a_row[wire] = 0
            return None
        # The kinds in turn, so that a few failures are of every kind.
        kinds = [f for f in FAULTS if f != "quota" or wire == "anthropic"]
        fault = kinds[sum(1 for f in self.faults.elements() if f.startswith(wire)) % len(kinds)]
        self._in_a_row[wire] += 1
        self.faults[f"{wire} {fault}"] += 1
        return fault


def handler(model: TeamModel, chaos: Chaos | None, wire: Wire) -> Callable[[Recorded], Reply]:
    def handle(request: Recorded) -> Reply:
        asked = seen(request.json(), wire)
        answer = model.answer(asked)
        if asked.going_on is not None:  # the rest of a text cut at its limit
            assert isinstance(answer, str)
            assert answer.startswith(asked.going_on)
            answer = answer[len(asked.going_on) :]
        fault = chaos.fault(wire) if chaos is not None else None
        if fault == "limit" and asked.going_on is not None:
            fault = None  # (one cut a reply: its continuation comes whole)
        whole = reply_events(answer, wire, limit=fault == "limit")
        if fault is None or fault == "limit":
            return Reply.sse(whole)
        return fault_reply(fault, wire, whole)

    return handle


CHAIN = "anthropic:claude-chaos,openai:gpt-chaos@{url}/v1"
CONFIG = """\
[agents.main]
cooldown = 0    # every call tries the first model again: both are used all along

[agents.worker]
cooldown = 0

[team]
max_live = 8
"""


async def run_team(
    workspace: Path, sessions: Path, anthropic: LoopbackServer, openai: LoopbackServer
) -> subprocess.CompletedProcess[bytes]:
    config = workspace.parent / "config.toml"
    config.write_text(CONFIG)
    return await orchestrator_on_trio(
        "run", "Write the chaos files.",
        "--model", CHAIN.format(url=openai.url), "--config", str(config),
        *run_flags(workspace, sessions),
        seconds=240,
        ANTHROPIC_API_KEY="sk-ant-chaos",
        ANTHROPIC_BASE_URL=anthropic.url,
        OPENAI_API_KEY="sk-chaos",
    )  # fmt: skip
