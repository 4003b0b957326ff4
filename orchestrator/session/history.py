"""What a session's snapshot does not keep, read from its journal's records for its
report (`History`): every message, the usage of each model call, the assessment verdicts,
each compaction and verification, the model each agent last used and the status's reason.
Only the lines of the kinds it wants are decoded (`History.read_line`)."""

from __future__ import annotations

import functools
from typing import Any, get_args

import msgspec

from orchestrator.loop.assessment import Assessed, Verified
from orchestrator.loop.compaction import ContextCompacted
from orchestrator.messages import ToolCall
from orchestrator.session.ledger import Call
from orchestrator.state.events import (
    AssistantReplied,
    CallResult,
    Record,
    SessionStatusChanged,
)
from orchestrator.state.mailbox import MailHistory, MessagePosted, MessagesDelivered
from orchestrator.store._line import line_kind

Read = (
    AssistantReplied
    | MessagePosted
    | MessagesDelivered
    | SessionStatusChanged
    | Assessed
    | Verified
    | CallResult
    | ContextCompacted
)
"""The records `History` reads (a `call_result` only when it delivers mail)."""


class History:
    """What the snapshot does not keep, from the journal's records: every message (the
    snapshot keeps the live ones), the usage of each model call (for `usage_ledger`; a
    compaction's summary calls are one entry), every assessment verdict, every
    compaction and verification run, the model each agent last called and the last
    status's reason."""

    def __init__(self, model: str) -> None:
        self.model = model  # the session's, for a reply that names none
        self.mail = MailHistory()
        self.calls: list[Call] = []
        self.verdicts: list[tuple[int, Assessed]] = []
        self.compactions: list[dict[str, Any]] = []
        self.verifications: list[dict[str, Any]] = []
        self.models: dict[str, str] = {}
        self.reason = ""
        # The tool calls of each reply that made any, by its seq: what a parked call
        # (the snapshot names it by ref) asks to run.
        self.replies: dict[int, tuple[ToolCall, ...]] = {}

    def read(self, seq: int, record: Record | Read) -> None:
        match record:
            case AssistantReplied(message=message):
                self.read_calls(record)
                if message.tool_calls:
                    self.replies[seq] = message.tool_calls
            case ContextCompacted():
                self._compacted(seq, record)
            case MessagePosted() | MessagesDelivered() | CallResult():
                self.mail.apply(seq, record)
            case SessionStatusChanged():
                self.reason = record.detail
            case Assessed():
                self.verdicts.append((seq, record))
            case Verified():
                self.verifications.append(
                    {
                        "seq": seq,
                        "agent": record.agent,
                        "passed": record.passed,
                        "commands": list(record.commands),
                        "exit_code": record.exit_code,
                        "output": record.output,
                        "counts": record.counts,
                    }
                )
            case _:
                pass

    def read_calls(self, record: Record | Read) -> None:
        """The model calls of `record` alone (a reply's, a compaction's summary calls), and
        the model its agent last called: what a task's journal elsewhere adds."""
        match record:
            case AssistantReplied(message=message):
                model = record.model or self.model
                self.models[record.agent] = model
                if message.usage is not None:
                    self.calls.append((record.agent, model, message.usage))
            case ContextCompacted(usage=usage) if usage is not None:
                self.calls.append((record.agent, record.model or self.model, usage))
            case _:
                pass

    def read_line(self, seq: int, line: bytes) -> None:
        """`read` of a journal line, decoded only when it is of a kind `History` wants;
        ValueError for a line without its kind, or not of its kind's schema."""
        kind = line_kind(line)
        if kind in _WANTED or (kind == _CALL_RESULT and b'"delivers":' in line):
            self.read(seq, _decoder().decode(line))

    def _compacted(self, seq: int, record: ContextCompacted) -> None:
        self.read_calls(record)
        self.compactions.append({"seq": seq, **record.figures()})


def _tag(kind: type[msgspec.Struct]) -> bytes:
    tag = kind.__struct_config__.tag
    assert isinstance(tag, str)
    return tag.encode()


_CALL_RESULT = _tag(CallResult)
_WANTED = frozenset(_tag(kind) for kind in get_args(Read)) - {_CALL_RESULT}


@functools.cache
def _decoder() -> msgspec.json.Decoder[Read]:
    """The lines `History` reads, decoded without building the decoder of every record."""
    return msgspec.json.Decoder(Read)
