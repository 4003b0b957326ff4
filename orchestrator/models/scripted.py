"""A model that replies from a script: for tests, the offline demo and recorded sessions.

A script gives each agent (by name, else by role, else `"*"`) its own list of replies.
The reply an agent gets is chosen by `request.step` (how many model calls that agent
made before), so the model keeps no position of its own and a resumed session picks up
exactly where it stood. Every request is recorded in `requests`.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import orjson
import trio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.errors import ScriptError
from orchestrator.messages import MessageView, ToolCall, Usage, UserMessage
from orchestrator.models.base import (
    COMPACTOR,
    ModelEvent,
    ModelRequest,
    StreamEnded,
    TextDelta,
    ToolCallReady,
    UsageReported,
)
from orchestrator.stamps import ByStamps


class ScriptedCall(BaseModel):
    """One tool call in a scripted reply. `arguments` may be an object or, to test
    malformed calls, a raw string that is passed through unparsed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None


class ScriptedReply(BaseModel):
    """One reply. `stop_reason` overrides the one its content implies (`end_turn`, or
    `tool_use` with calls): `max_tokens` makes a reply cut at the output limit, and the
    turn loop's asks for the rest (`ModelRequest.recovery` 1, 2) get `then`'s replies."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = ""
    tool_calls: tuple[ScriptedCall, ...] = ()
    usage: Usage | None = None
    stop_reason: str | None = None
    then: tuple[ScriptedReply, ...] = ()


class ScriptedWindow(BaseModel):
    """The context window the scripted model claims (so compaction has one to aim at)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context: int = Field(gt=0)
    output: int = Field(default=0, ge=0)


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    description: str = ""
    window: ScriptedWindow | None = None
    latency: float = Field(default=0.0, ge=0.0, le=60.0)
    """Seconds each reply waits before it comes (on trio), to stand for a real model's
    time: so that a benchmark's subagents on workers take their time too."""
    chunk_latency: float = Field(default=0.0, ge=0.0, le=10.0)
    """Seconds between two pieces of a reply's text as it streams (on trio), as a real
    provider sends them: what a person sees of a slow stream is tested with it."""
    agents: dict[str, tuple[ScriptedReply, ...]]


Responder = Callable[[ModelRequest], "ScriptedReply | Awaitable[ScriptedReply]"]


_parsed: ByStamps[str, Script] = ByStamps(most=32)  # by absolute path


def load_script(path: Path) -> Script:
    """Read and validate a script file; errors name the agent and step at fault. A file
    read before is parsed again only when its stat changed (a worker makes a model of
    the same script for every task); one changed lately is not kept (`settled`)."""
    key = os.path.abspath(path)
    return _parsed.get(key, [key], lambda: _load_script(path))


def _load_script(path: Path) -> Script:
    try:
        raw = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise ScriptError(f"script file {path} does not exist", provider="scripted") from None
    except orjson.JSONDecodeError as exc:
        raise ScriptError(f"script file {path} is not JSON: {exc}", provider="scripted") from exc
    except OSError as exc:  # a directory, unreadable, ...
        reason = exc.strerror or str(exc)
        raise ScriptError(f"script file {path}: {reason}", provider="scripted") from None
    return parse_script(raw, source=str(path))


def parse_script(raw: object, *, source: str = "<script>") -> Script:
    try:
        return Script.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = first["loc"]
        where = _describe_location(loc)
        raise ScriptError(f"{source}: {where}: {first['msg']}", provider="scripted") from exc


def _describe_location(loc: tuple[int | str, ...]) -> str:
    if len(loc) >= 3 and loc[0] == "agents":
        rest = ".".join(str(part) for part in loc[3:])
        return f"agent {loc[1]!r} step {loc[2]}" + (f" ({rest})" if rest else "")
    return ".".join(str(part) for part in loc) or "top level"


class ScriptedModel:
    """A `Model` driven by a `Script` or, in tests, by a Python callable."""

    def __init__(
        self,
        script: Script | Responder,
        *,
        name: str = "scripted",
        window: ScriptedWindow | None = None,
    ) -> None:
        self._script = script
        self._name = name
        self.requests: list[ModelRequest] = []
        if window is None and isinstance(script, Script):
            window = script.window
        self.window = window  # what compaction aims at (None: no window, no compaction)

    @classmethod
    def from_file(cls, path: Path) -> ScriptedModel:
        return cls(load_script(path), name=f"scripted:{path.name}")

    @property
    def name(self) -> str:
        return self._name

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        self.requests.append(request)
        reply = await self._reply_for(request)
        pause = self._script.chunk_latency if isinstance(self._script, Script) else 0.0
        yield _events(reply, request, pause)

    async def _reply_for(self, request: ModelRequest) -> ScriptedReply:
        if isinstance(self._script, Script):
            if self._script.latency:
                await trio.sleep(self._script.latency)
            return self._scripted_reply(self._script, request)
        produced = self._script(request)
        if inspect.isawaitable(produced):
            produced = await produced
        if not isinstance(produced, ScriptedReply):
            raise ScriptError(
                f"scripted responder returned {type(produced).__name__} for agent "
                f"{request.agent!r} step {request.step}; expected ScriptedReply",
                provider="scripted",
            )
        return produced

    def _scripted_reply(self, script: Script, request: ModelRequest) -> ScriptedReply:
        if request.role == COMPACTOR:
            return _summary_reply(script, request)
        for key in (request.agent, request.role, "*"):
            if key in script.agents:
                replies = script.agents[key]
                break
        else:
            known = ", ".join(sorted(script.agents)) or "none"
            raise ScriptError(
                f"script has no replies for agent {request.agent!r} (role {request.role!r}); "
                f"agents in the script: {known}",
                provider="scripted",
            )
        return _at_step(replies, request, f"agent {request.agent!r} (key {key!r})")


async def _events(
    reply: ScriptedReply, request: ModelRequest, pause: float = 0.0
) -> AsyncIterator[ModelEvent]:
    for index, word in enumerate(_chunks(reply.text)):
        if pause and index:
            await trio.sleep(pause)
        yield TextDelta(text=word)
    for index, call in enumerate(reply.tool_calls):
        arguments = (
            call.arguments
            if isinstance(call.arguments, str)
            else orjson.dumps(call.arguments).decode()
        )
        call_id = call.id or f"call_{request.agent}_{request.step}_{index}"
        yield ToolCallReady(call=ToolCall(id=call_id, name=call.name, arguments=arguments))
    yield UsageReported(usage=reply.usage or _estimate_usage(request, reply))
    stop_reason = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
    yield StreamEnded(stop_reason=stop_reason)


def _summary_reply(script: Script, request: ModelRequest) -> ScriptedReply:
    """A summary request's reply: the script's own for `AGENT/compactor` or `compactor`
    (by the agent's count of summary calls), else a summary made from the request."""
    for key in (f"{request.agent}/{COMPACTOR}", COMPACTOR):
        replies = script.agents.get(key)
        if replies is not None:
            whose = f"the summaries of agent {request.agent!r} (key {key!r})"
            return _at_step(replies, request, whose)
    return ScriptedReply(text=default_summary(request))


def _at_step(
    replies: tuple[ScriptedReply, ...], request: ModelRequest, whose: str
) -> ScriptedReply:
    """The reply at the request's step (its `then` for a recovery's ask), or a
    `ScriptError` saying the script ran out."""
    if request.step >= len(replies):
        raise ScriptError(
            f"script ran out: {whose} asked for step {request.step} but the script has "
            f"{len(replies)} replies for it",
            provider="scripted",
        )
    reply = replies[request.step]
    if not request.recovery:
        return reply
    if request.recovery > len(reply.then):
        raise ScriptError(
            f"script ran out: {whose} asked again (recovery {request.recovery}) for step "
            f"{request.step}, whose reply has {len(reply.then)} replies in `then`",
            provider="scripted",
        )
    return reply.then[request.recovery - 1]


def default_summary(request: ModelRequest) -> str:
    """A summary with every required section, from the transcript in a summary request:
    the user's messages quoted, the rest said plainly (deterministic)."""
    text = "\n".join(m.content for m in request.messages if isinstance(m, UserMessage))
    said = re.findall(r"^\[user\]\n(.*?)(?=\n\n\[|\Z)", text, flags=re.MULTILINE | re.DOTALL)
    quoted = "\n".join(f"> {line[:300]}" for line in said) or "(none)"
    calls = len(re.findall(r"^-> ", text, flags=re.MULTILINE))
    return "\n\n".join(
        [
            f"## Goal and constraints\n{said[0][:300] if said else '(see the anchors)'}",
            f"## User messages\n{quoted}",
            f"## Decisions\nWork went on as the user asked ({calls} tool calls so far).",
            "## Files touched\nSee the files listed with the anchors.",
            "## Errors and fixes\nNone that stopped the work.",
            "## Current work\nThe open items of the todo list.",
            "## Next step\nThe first open todo item.",
        ]
    )


def _chunks(text: str) -> list[str]:
    """Split text into word-sized deltas, as a real stream would deliver it."""
    return re.findall(r"\s*\S+\s*|\s+", text)


def _estimate_usage(request: ModelRequest, reply: ScriptedReply) -> Usage:
    """A rough, deterministic token count (4 characters a token) so budgets have figures."""
    prompt_chars = MessageView.of(request.messages).chars
    output_chars = len(reply.text) + sum(
        len(call.name) + len(str(call.arguments)) for call in reply.tool_calls
    )
    return Usage(input_tokens=prompt_chars // 4, output_tokens=max(1, output_chars // 4))
