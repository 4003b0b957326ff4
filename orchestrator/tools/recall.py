"""`recall`: read back, from the session's journal, a tool output pruned from the
agent's context (its stub names the call's ref) or an older part of its own history.

The tool is thin: the lookup is passed in (`LiveSession.recall`, which renders what
session/recall.py finds), so tools/ does not reach up into the session. A ref that names
nothing the agent may read is an error result the model reads, saying why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.errors import RecallRefused, SessionError, ToolFailed
from orchestrator.tools.base import Tool, ToolContext, ToolOutput

Lookup = Callable[[str, str, int], Awaitable[str]]
"""(agent, ref, offset) -> the page of text from `offset` on; raises `RecallRefused` for
a ref that names nothing the agent may read (`LiveSession.recall` is one)."""


class RecallArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ref: str = Field(
        description=(
            'What to read back. "<seq>.<index>" (e.g. "12.0"): a tool call, with its '
            'arguments and its whole result (the stub of a pruned output names it). "<seq>" '
            '(e.g. "12"): one message of your history: a reply of yours (its text and its '
            "calls' refs), a message added to your context, or a mail delivery."
        )
    )
    offset: int = Field(
        0,
        ge=0,
        description=(
            "Where to start, in characters, in a text too long for one call: the offset "
            "the last line of the previous part gives."
        ),
    )


class Recall(Tool[RecallArgs]):
    name = "recall"
    description = (
        "Read back from the session's journal a tool output pruned from your context, or "
        "an older part of your own history, by its ref. Changes nothing. A long text comes "
        "in parts: the last line says the offset to ask for next."
    )
    args_model = RecallArgs
    read_only = True
    idempotent = True
    interruptible = True

    def __init__(self, lookup: Lookup) -> None:
        self.lookup = lookup

    async def run(self, args: RecallArgs, ctx: ToolContext) -> ToolOutput:
        try:
            text = await self.lookup(ctx.agent, args.ref, args.offset)
        except (RecallRefused, SessionError) as exc:  # a journal that cannot be read, too
            raise ToolFailed(str(exc)) from exc
        return ToolOutput(text)
