"""A compaction's summary written: the compactor model asked for it (a repair when it
lacks sections, a shorter request when the model finds it too long), else the fallback
built from facts. `loop/summary.py` makes the requests and checks the replies; this
module makes the calls."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from orchestrator.errors import ContextTooLong, ModelError
from orchestrator.loop.compaction import Method
from orchestrator.loop.summary import (
    fallback_summary,
    missing_sections,
    repair_request,
    shrink,
    summary_request,
)
from orchestrator.messages import AssistantMessage, Message, MessageView, Usage
from orchestrator.models.base import COMPACTOR, Model, ModelRequest, collect
from orchestrator.state.context import AgentContext
from orchestrator.team.anchoring import facts

ATTEMPTS = 2
"""Summary calls that fail (an error, or sections missing) before the fallback."""


class Summary(msgspec.Struct, frozen=True):
    """A summary written: its text, by whom (the model, else the fallback), and what the
    calls to the model made and cost."""

    text: str
    method: Method
    attempts: int = 0
    usage: Usage | None = None
    model: str = ""


async def summarise(
    model: Model, context: AgentContext, head: Sequence[Message], files: Sequence[str]
) -> Summary:
    """The summary of `head` (the messages of `context` it replaces): `model`'s, else,
    after `ATTEMPTS` failures, the fallback built from what is known of them (`files`:
    the files the agent changed)."""
    text, attempts, usage = await _ask_for(model, context, head)
    if text is None:
        text = fallback_summary(facts(context, head, files))
        return Summary(text, "fallback", attempts, usage, model.name)
    return Summary(text, "summary", attempts, usage, model.name)


async def _ask_for(
    model: Model, context: AgentContext, head: Sequence[Message]
) -> tuple[str | None, int, Usage | None]:
    """`model`'s summary of `head` (None after `ATTEMPTS` failures), the calls made and
    what they spent."""
    calls, failures, usage = 0, 0, None
    request = summary_request(head)
    while failures < ATTEMPTS:
        try:
            reply = await _ask(model, context, request, step=context.summary_calls + calls)
        except ContextTooLong:
            # The summariser's own request is too long: its oldest outputs first.
            calls += 1
            shorter = shrink(head)
            if shorter is None:
                return None, calls, usage
            head = shorter
            request = summary_request(head)
            continue
        except ModelError:
            calls += 1
            failures += 1
            continue
        calls += 1
        if reply.usage is not None:
            usage = reply.usage if usage is None else usage + reply.usage
        missing = missing_sections(reply.text)
        if not missing:
            return reply.text.strip(), calls, usage
        failures += 1
        request = repair_request(summary_request(head), reply.text, missing)
    return None, calls, usage


async def _ask(
    model: Model, context: AgentContext, messages: list[Message], step: int
) -> AssistantMessage:
    request = ModelRequest(
        messages=MessageView.of(messages), tools=(), agent=context.id, role=COMPACTOR, step=step
    )
    async with model.stream(request) as stream:
        return await collect(stream)
