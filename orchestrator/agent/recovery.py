"""A reply cut at its output limit (`models.base.at_output_limit`), recovered.

Cut text is continued: the model gets the context, the text so far as its last message
and a note asking it to go on exactly where it stopped (for that request only: nothing of
it joins the context), and the pieces are joined into one reply. A reply cut inside a
tool call (its arguments not a whole JSON object), or cut before it said anything, is
asked for again once with a larger output limit: double the one it hit, up to the
model's own (`models.windows`), else `OUTPUT_CAP`. Cut again, its cut calls are marked
(`ToolCall.cut`): they never run, and their result tells the model the call was too long
to emit and to write the file in parts (`too_long`). Never more than `RECOVERIES` asks
for one reply; the usage of every attempt is the reply's.

`next_step` decides, from values only; `recovered` asks and says.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Awaitable, Callable, Sequence
from typing import assert_never

import msgspec
import orjson

from orchestrator.errors import ContextTooLong, ProviderBadRequest
from orchestrator.messages import AssistantMessage, ToolCall, Usage, UserMessage
from orchestrator.models.base import ModelRequest, at_output_limit
from orchestrator.models.windows import known_window
from orchestrator.state.events import EventSink, LimitRecovery, ReplyAtLimit

RECOVERIES = 2
"""Requests beyond the first that one reply may take to recover from its output limit."""

OUTPUT_CAP = 32_768
"""The most a larger limit asks for when the model's own output limit is not known (not in
models/windows.py): twice the 8k to 16k that adapters and servers commonly default to,
and no more than current hosted models emit. A server that takes less refuses the
request (a 400), and the cut call is then answered as too long."""

GO_ON = (
    "Your reply above was cut off at the output limit. Continue it exactly where it "
    "stopped, without repeating anything and without starting over."
)
"""The note sent after the text so far, for the continuation request only."""


@dataclasses.dataclass(frozen=True)
class Step:
    """What to do with a cut reply: `continue` it, ask for it again with `max_tokens`
    (`larger`), or give up on its cut calls (`too_long`)."""

    how: LimitRecovery
    max_tokens: int | None = None


def cut_calls(reply: AssistantMessage) -> list[ToolCall]:
    """The calls of a reply cut at its output limit whose arguments did not all come
    (they are not a whole JSON object)."""
    if not at_output_limit(reply.stop_reason):
        return []
    return [call for call in reply.tool_calls if not _whole(call.arguments)]


def _whole(arguments: str) -> bool:
    try:
        return isinstance(orjson.loads(arguments), dict)
    except orjson.JSONDecodeError:
        return False


def limit_hit(request: ModelRequest, reply: AssistantMessage) -> int:
    """The output limit a cut reply met: the request's, else (the adapter's default was
    used) the output tokens it spent, which is that limit; 0 when neither is known."""
    if request.max_tokens:
        return request.max_tokens
    return reply.usage.output_tokens if reply.usage is not None else 0


def larger_limit(request: ModelRequest, reply: AssistantMessage, model: str) -> int | None:
    """Double the limit the reply met, up to the model's own output limit (else
    `OUTPUT_CAP`); None when that is no larger."""
    known = known_window(model)
    ceiling = known.output if known is not None and known.output else OUTPUT_CAP
    hit = limit_hit(request, reply)
    wanted = min(2 * hit, ceiling) if hit else ceiling
    return wanted if wanted > hit else None


def next_step(
    request: ModelRequest, reply: AssistantMessage, model: str, *, asked: int, larger: bool
) -> Step | None:
    """What to do with `reply` to `request`, after `asked` recoveries of this reply
    (`larger`: one of them asked for a larger limit already): None when it is whole, or
    nothing more can be done (no recovery left for cut text: it stays as it is)."""
    if not at_output_limit(reply.stop_reason):
        return None
    cut = cut_calls(reply)
    if reply.tool_calls and not cut:
        return None  # its calls are whole: they run
    if reply.text and not cut:
        return Step("continue") if asked < RECOVERIES else None
    # Cut inside a call, or before it said anything: nothing to go on from.
    bigger = larger_limit(request, reply, model)
    if asked < RECOVERIES and not larger and bigger is not None:
        return Step("larger", bigger)
    return Step("too_long") if cut else None


def continuation(
    first: ModelRequest, current: ModelRequest, text: str, recovery: int
) -> ModelRequest:
    """The request that asks the model to go on from `text`: the first request's messages
    (with its note, which the model saw before the text), the text as the model's, and
    `GO_ON`; with the output limit of the `current` request."""
    said = (UserMessage(content=first.note),) if first.note else ()
    messages = (*first.messages, *said, AssistantMessage(text=text))
    return dataclasses.replace(
        first,
        messages=messages,
        note=GO_ON,
        max_tokens=current.max_tokens,
        recovery=recovery,
    )


def joined(pieces: Sequence[AssistantMessage], dropped: Usage | None) -> AssistantMessage:
    """One reply of the pieces a continued reply came in (the calls are the last one's),
    its usage that of every piece and of the attempts `dropped` (asked again larger)."""
    last = pieces[-1]
    if len(pieces) == 1 and dropped is None:
        return last  # (every reply that was not cut)
    usages = [u for u in (dropped, *(p.usage for p in pieces)) if u is not None]
    usage = sum(usages[1:], usages[0]) if usages else None
    return msgspec.structs.replace(
        last,
        text="".join(p.text for p in pieces),
        thinking=tuple(block for p in pieces for block in p.thinking),
        usage=usage,
    )


def add(total: Usage | None, usage: Usage | None) -> Usage | None:
    if usage is None:
        return total
    return usage if total is None else total + usage


def given_up(reply: AssistantMessage) -> AssistantMessage:
    """The reply with its cut calls marked (`ToolCall.cut`) and emptied: the turn loop
    answers each with `too_long` instead of running it."""
    cut = {call.id for call in cut_calls(reply)}
    calls = tuple(
        msgspec.structs.replace(call, arguments="{}", cut=len(call.arguments))
        if call.id in cut
        else call
        for call in reply.tool_calls
    )
    return msgspec.structs.replace(reply, tool_calls=calls)


def too_long(call: ToolCall) -> str:
    """The result of a call the output limit cut off: what happened, and what to do."""
    size = f" after {call.cut:,} characters of its arguments" if call.cut else ""
    return (
        f"{call.name} was not run: the call was too long to emit. Your reply reached the "
        f"output limit{size}, before the call was whole (a larger limit did not help, or "
        "there is none). Make it in smaller parts: write a long file in parts (a first "
        "part with write_file, then each further part added with edit_file, or several "
        "smaller files), and keep each call's arguments short."
    )


Ask = Callable[[ModelRequest], Awaitable[AssistantMessage]]
"""One model call, its reply collected (and streamed to the view as it comes)."""


async def recovered(
    request: ModelRequest, reply: AssistantMessage, ask: Ask, model: str, events: EventSink
) -> AssistantMessage:
    """The `reply` to `request` (`ask`ed of `model`), recovered when its output limit cut
    it: continued, or asked for again with a larger limit, at most `RECOVERIES` times,
    each said with a `ReplyAtLimit`; the pieces joined into one reply."""
    first = current = request
    pieces: list[AssistantMessage] = []  # continued text, before `reply`
    dropped: Usage | None = None  # the attempts asked for again with a larger limit
    larger = False
    for asked in itertools.count():
        step = next_step(current, reply, model, asked=asked, larger=larger)
        if step is None:
            break
        await events.emit(notice(request.agent, step, current, reply, asked + 1))
        if step.how == "too_long":
            reply = given_up(reply)
            break
        if step.how == "continue":
            pieces.append(reply)
            text = "".join(piece.text for piece in pieces)
            current = continuation(first, current, text, asked + 1)
            reply = await ask(current)
            continue
        larger = True
        bigger = dataclasses.replace(current, max_tokens=step.max_tokens, recovery=asked + 1)
        try:
            again = await ask(bigger)
        except (ProviderBadRequest, ContextTooLong) as exc:
            # The larger limit refused (more than the model or its window takes): the
            # cut calls are answered as too long to emit.
            refused = notice(request.agent, Step("too_long"), current, reply, 0, str(exc))
            await events.emit(refused)
            reply = given_up(reply)
            break
        dropped = add(dropped, reply.usage)
        current, reply = bigger, again
    return joined([*pieces, reply], dropped)


def notice(
    agent: str,
    step: Step,
    request: ModelRequest,
    reply: AssistantMessage,
    asked: int,
    refused: str = "",
) -> ReplyAtLimit:
    """What a person is told of `step`, taken for `reply` to `request`."""
    hit = limit_hit(request, reply)
    at = f"its output limit ({hit:,} tokens)" if hit else "its output limit"
    cut = cut_calls(reply)
    what = f"{agent}'s call to {cut[0].name}" if cut else f"{agent}'s reply"
    match step.how:
        case "continue":
            message = f"{agent}'s reply reached {at}: asking the model to go on where it stopped"
        case "larger":
            message = f"{what} was cut at {at}: asking again with {step.max_tokens:,}"
        case "too_long":
            why = f" (a larger limit was refused: {refused})" if refused else ""
            message = f"{what} is too long to emit, cut at {at}{why}: not run, the model is told"
        case _:
            assert_never(step.how)
    if step.how != "too_long":
        message += f" (recovery {asked} of {RECOVERIES})"
    return ReplyAtLimit(
        agent=agent,
        message=message,
        how=step.how,
        recovery=asked if step.how != "too_long" else 0,
        max_tokens=step.max_tokens,
    )
