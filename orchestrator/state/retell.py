"""Journal records told again as the events a run emitted, for the sinks that show a run:
`sessions watch` tells a session's journal (view/follow.py), and a session tells the
journals of its tasks on workers (engine/remote.py) as it reads them."""

from __future__ import annotations

from orchestrator.messages import ToolCall, ToolResult
from orchestrator.state.checkpoints import WorkspaceCheckpointed
from orchestrator.state.context import call_ref
from orchestrator.state.events import (
    AssistantReplied,
    CallResult,
    EffectStarted,
    Event,
    Record,
    TextStreamed,
    ToolCallFinished,
    ToolCallStarted,
)


class RecordEvents:
    """The events a run emitted, told again from its journal's records, for the sinks
    that show a run (the transcript, JSON lines): a reply's text as one `TextStreamed`
    before it, and a tool call's start and end (`ToolCallStarted` at its journaled start
    when it has one, else just before its result; `ToolCallFinished` with the whole
    result, named from the reply). Each comes with the seq of the record it tells, None
    for the text and a start not journaled. A replayed start has `read_only` False: the
    journal does not keep it."""

    def __init__(self) -> None:
        self._calls: dict[str, ToolCall] = {}  # the calls replied and not yet ended, by ref
        self._started: set[str] = set()

    def of(self, seq: int, record: Record) -> list[tuple[int | None, Event]]:
        match record:
            case AssistantReplied(message=message):
                for index, call in enumerate(message.tool_calls):
                    self._calls[call_ref(seq, index)] = call
                text = TextStreamed(agent=record.agent, text=message.text)
                return [(None, text), (seq, record)] if message.text else [(seq, record)]
            case EffectStarted(ref=ref):
                replied = self._calls.get(ref)
                if replied is None:
                    return []
                self._started.add(ref)
                return [(seq, self._start(record.agent, ref, replied, idempotent=False))]
            case CallResult(ref=ref):
                return self._ended(seq, record)
            case WorkspaceCheckpointed(ref=ref) if ref in self._calls:
                # (taken after its call ran, before its result: a start not journaled
                # is told before it, where the run emitted it)
                told: list[tuple[int | None, Event]] = []
                if ref not in self._started:
                    self._started.add(ref)
                    call = self._calls[ref]
                    told.append((None, self._start(record.agent, ref, call, idempotent=True)))
                return [*told, (seq, record)]
            case _:
                return [(seq, record)]

    def _ended(self, seq: int, record: CallResult) -> list[tuple[int | None, Event]]:
        ref = record.ref
        call = self._calls.pop(ref, None)
        if call is None:
            return []  # (a call of a reply before the records read: never, from seq 1)
        told: list[tuple[int | None, Event]] = []
        if ref not in self._started:
            told.append((None, self._start(record.agent, ref, call, idempotent=True)))
        self._started.discard(ref)
        result = ToolResult(
            call_id=call.id,
            name=call.name,
            status=record.status,
            content=record.content,
            changed=record.changed,
        )  # (without its ref, as a run emits it: the ref is the event's)
        finished = ToolCallFinished(
            agent=record.agent, ref=ref, result=result, delivers=record.delivers
        )
        told.append((seq, finished))
        return told

    @staticmethod
    def _start(agent: str, ref: str, call: ToolCall, *, idempotent: bool) -> ToolCallStarted:
        return ToolCallStarted(
            agent=agent, ref=ref, call=call, read_only=False, idempotent=idempotent
        )
