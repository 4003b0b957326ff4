"""A server asking for a model's completion (sampling, docs/mcp.md "What a server may
ask"): refused unless its config allows it (`sampling = true`, mcp/asked.py), then
answered by the calling agent's model (the call's `Calling.model`, which takes one of the
session's model-call slots as the agents' own calls do), the usage journaled
(`mcp_sampled`, state/mcp.py) and so counted in the session's usage and cost like any
model call's.

The request's text parts become the messages (an image or audio part is named, not
sent); its system prompt, token limit, temperature and stop sequences are kept; tools
in a sampling request are not offered (the model answers in text).
"""

from __future__ import annotations

from typing import Any, Protocol

from orchestrator.mcp.asked import Calling
from orchestrator.mcp.servers import McpServer
from orchestrator.messages import AssistantMessage, Message, SystemMessage, Usage, UserMessage
from orchestrator.models.base import ModelRequest, collect
from orchestrator.state.mcp import McpSampled

SAMPLER = "sampling"
"""The request's agent is `AGENT/sampling` (a script keys its replies so)."""


class _Session(Protocol):
    @property
    def state(self) -> Any: ...

    async def emit(self, event: Any, *, durable: bool = False) -> None: ...


class Sampler:
    """Answers a server's `sampling/createMessage` with the calling agent's model
    (`Calling.model`: mcp/asked.py refuses a call that has none)."""

    def __init__(self, session: _Session) -> None:
        self._session = session

    async def __call__(self, server: McpServer, calling: Calling, params: Any) -> Any:
        import mcp_types as types

        model = calling.model
        assert model is not None  # (refused before: `callbacks`)
        state = self._session.state
        context = state.agents.get(calling.agent)
        role = context.role if context is not None else "main"
        request = ModelRequest(
            messages=messages_of(params),
            agent=f"{calling.agent}/{SAMPLER}",
            role=role,
            step=state.mcp.sampled.get(calling.agent, 0),
            max_tokens=params.max_tokens,
            temperature=params.temperature,
            stop=tuple(params.stop_sequences or ()),
        )
        async with model.stream(request) as events:
            reply = await collect(events)
        record = McpSampled(
            agent=calling.agent, server=server.name, model=model.name, usage=_used(reply)
        )
        await (calling.events or self._session).emit(record, durable=True)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=reply.text),
            model=model.name,
            stop_reason="maxTokens" if reply.stop_reason == "length" else "endTurn",
        )


def _used(reply: AssistantMessage) -> Usage:
    return reply.usage if reply.usage is not None else Usage()


def messages_of(params: Any) -> list[Message]:
    """The sampling request's messages as ours (its system prompt first)."""
    messages: list[Message] = []
    if params.system_prompt:
        messages.append(SystemMessage(content=params.system_prompt))
    for message in params.messages:
        parts = []
        for block in message.content_as_list:
            text = getattr(block, "text", None)
            kind = getattr(block, "type", "unknown")
            parts.append(text if isinstance(text, str) else f"[{kind} content not shown]")
        text = "\n".join(parts)
        if message.role == "assistant":
            messages.append(AssistantMessage(text=text))
        else:
            messages.append(UserMessage(content=text))
    return messages
