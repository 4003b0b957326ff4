"""The sink that keeps secrets out of a session: every event passes through it before the
journal, the live state and the screen see it (team/drive.py puts it in front of them).

Whoever wrote a secret — the model in its reply or a tool call's arguments, a tool's
output, a person's message, an error — the event that carries it is replaced by one with
the value redacted, before anything folds it. A reply's calls run from the folded reply,
so they run redacted, and a call run again after a crash does what the first run did.

Streamed text is shown as it comes, all but a tail that could be the start of a secret
(`Redactor.held`), which waits for the next piece or the agent's next event."""

from __future__ import annotations

from typing import Any

import msgspec

from orchestrator.redaction import Redactor
from orchestrator.state.events import Event, EventSink, TextStreamed


def scrubbing(sink: EventSink, redactor: Redactor) -> EventSink:
    """`sink` behind a `Scrubbed` when `redactor` knows a secret; else `sink` itself, with
    no layer every event would pass through for nothing."""
    return Scrubbed(sink, redactor) if redactor else sink


class Scrubbed:
    """`sink`, given every event with the values `redactor` knows redacted."""

    def __init__(self, sink: EventSink, redactor: Redactor) -> None:
        self._sink = sink
        self._redactor = redactor
        self._held: dict[str, str] = {}  # agent -> streamed text not shown yet

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        redactor = self._redactor
        if not redactor:
            await self._sink.emit(event, durable=durable)
            return
        if isinstance(event, TextStreamed):
            await self._stream(event)
            return
        held = self._held.pop(event.agent, "")
        if held:
            await self._sink.emit(TextStreamed(agent=event.agent, text=redactor(held)))
        await self._sink.emit(scrubbed(event, redactor), durable=durable)

    async def _stream(self, event: TextStreamed) -> None:
        text = self._held.pop(event.agent, "") + event.text
        keep = self._redactor.held(text)
        if keep:
            self._held[event.agent] = text[-keep:]
            text = text[:-keep]
        if text:
            await self._sink.emit(TextStreamed(agent=event.agent, text=self._redactor(text)))


def scrubbed(event: Event, redactor: Redactor) -> Event:
    """`event`, or a copy of it with every secret value `redactor` knows redacted."""
    if not redactor.found_in(msgspec.json.encode(event)):
        return event
    fields: Any = redactor.scrub(msgspec.to_builtins(event))
    copy: Event = msgspec.convert(fields, type(event))
    return copy
