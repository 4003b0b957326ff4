"""Reading an agent's own history back from the journal: what the `recall` tool shows.

After a compaction, an old tool output in an agent's context is a one-line stub naming
its call's ref, and older messages are gone from the context; the journal still holds
them all. `recall_text(directory, agent, ref)` finds what a ref names and renders it as
text for the model:

- `"<seq>.<index>"`: a tool call, with its name and arguments (from the reply journaled at
  `seq`) and its result's status and content (the `call_result` record with that ref);
- `"<seq>"`: one record of the agent's context: a reply (its text, its calls by ref), a
  message added to the context, a mail delivery, the messages the context started with
  (`agent_started`), a continuation note.

An agent reads only its own history: a ref of another agent's record is refused as "not
in your history", with nothing of what that record holds.

Fast on a long journal, and independent of its length but for a call whose result lies
far after its reply: line n of a journal is record n (docs/session-format.md), so the
line of `seq` is found by bisecting the file's bytes through a memory map, and a call's
result by searching the bytes after its reply for its ref. Only the lines found are
checked (frame and checksum) and decoded; nothing before `seq` is read but the bisection's
probes. Records of a batch whose end is not in the file (a crash's torn tail, or a batch
being written this instant) are not there, as for a scan.

Blocking: on the trio loop, run it in a thread. A live session's writer may hold records
it has folded but not yet written: `LiveSession.recall` flushes them first. The file is
mapped, not copied: a reader must not race a process that truncates it (only opening a
session for writing does, to cut a torn tail, under the session's lock).
"""

from __future__ import annotations

import mmap
import os
import re
from pathlib import Path
from types import TracebackType

import msgspec
import orjson

from orchestrator.errors import JournalCorrupt, RecallRefused
from orchestrator.layout import JOURNAL
from orchestrator.loop.assessment import Assessed, Verified
from orchestrator.loop.compaction import ContextCompacted
from orchestrator.messages import AssistantMessage, Message, ToolResult
from orchestrator.session.replay import decode_records
from orchestrator.state.context import call_ref
from orchestrator.state.events import (
    AgentStarted,
    AssistantReplied,
    CallResult,
    EffectStarted,
    MessageAdded,
    Record,
)
from orchestrator.state.mailbox import MessagesDelivered
from orchestrator.store._line import CRC_SUFFIX_LEN, MORE, SEQ_PREFIX, line_fault

LIMIT = 20_000
"""Characters of a recalled text per page, by default."""

REF_FORMS = (
    '"<seq>.<index>" for a tool call with its result (e.g. "12.0"), or "<seq>" for one '
    'message of your history (e.g. "12")'
)
_REF = re.compile(r"([1-9][0-9]*)(?:\.(0|[1-9][0-9]*))?")


def recall_text(
    directory: Path, agent: str, ref: str, *, offset: int = 0, limit: int = LIMIT
) -> str:
    """What `ref` names in `agent`'s history in the session at `directory`, as text for
    the model: characters `offset` to `offset + limit` of it, with a last line saying how
    much is left and the offset to ask for next when it does not all fit. Raises
    `RecallRefused` (the message is for the model) for a ref that names nothing `agent`
    may read, `JournalCorrupt` for a line found broken."""
    if offset < 0 or limit < 1:
        raise ValueError(f"offset must be 0 or more and limit 1 or more: {offset}, {limit}")
    seq, index = _parse(ref)
    with _Journal(directory / JOURNAL) as journal:
        if seq > journal.last_seq:
            raise RecallRefused(
                f"ref {_q(ref)} is beyond the journal, which ends at seq {journal.last_seq}"
            )
        record = journal.record(seq)
        if record.agent != agent:
            raise RecallRefused(f"ref {_q(ref)} is not in your history")
        text = _message(seq, record) if index is None else _call(journal, seq, index, record)
    return _page(text, ref, offset, limit)


def _parse(ref: str) -> tuple[int, int | None]:
    match = _REF.fullmatch(ref.strip())
    if match is None:
        raise RecallRefused(f"malformed ref {_q(ref)}: a ref is {REF_FORMS}")
    seq, index = match.groups()
    return int(seq), None if index is None else int(index)


def _q(text: str) -> str:
    return orjson.dumps(text).decode()


# --- rendering --------------------------------------------------------------------------


def _message(seq: int, record: Record) -> str:
    """The text of the record at `seq` (the caller's own) as a message of its context."""
    match record:
        case AssistantReplied(message=reply):
            return _reply(seq, reply)
        case MessageAdded(message=message):
            return f"seq {seq}: a message added to your context\n{_said(message)}"
        case MessagesDelivered(ids=ids, content=content):
            return f"seq {seq}: mail delivered to you ({', '.join(ids)})\n{content}"
        case AgentStarted(role=role, messages=messages):
            said = "\n\n".join(_said(message) for message in messages)
            return f"seq {seq}: your context started (role {role})\n{said}"
        case ContextCompacted(messages=messages, method=method):
            said = "\n\n".join(_said(message) for message in messages)
            return f"seq {seq}: a compaction ({method}) restarted your context here\n{said}"
        case Assessed(note=note) | Verified(note=note) if note:
            return f"seq {seq}: a note the session added to your context\n{note}"
        case CallResult(ref=ref) | EffectStarted(ref=ref):
            raise RecallRefused(
                f"seq {seq} is a record of call {ref}, not a message: recall {_q(ref)} for "
                "the call and its result"
            )
        case _:
            raise RecallRefused(
                f"seq {seq} is a {record.kind} record, not a message of your context: a seq "
                "names a reply of yours, a message added to your context, a mail delivery "
                "or your context's start"
            )


def _reply(seq: int, reply: AssistantMessage) -> str:
    lines = [f"seq {seq}: your reply", reply.text or "(no text)"]
    if reply.tool_calls:
        lines.append("calls (recall a call's ref for its result):")
        for index, call in enumerate(reply.tool_calls):
            lines.append(f"- {call_ref(seq, index)} {call.name} {call.arguments}")
    return "\n".join(lines)


def _said(message: Message) -> str:
    if isinstance(message, AssistantMessage):
        return f"[assistant]\n{message.text}"
    if isinstance(message, ToolResult):
        return f"[tool result of {message.name}: {message.status}]\n{message.content}"
    return f"[{message.role}]\n{message.content}"


def _call(journal: _Journal, seq: int, index: int, record: Record) -> str:
    ref = call_ref(seq, index)
    if not isinstance(record, AssistantReplied):
        raise RecallRefused(
            f"seq {seq} is not a reply of yours, so it made no calls: ref {_q(ref)} names "
            f"nothing (recall {_q(str(seq))} for the record itself)"
        )
    calls = record.message.tool_calls
    if index >= len(calls):
        made = (
            f"made {len(calls)} call{'s' if len(calls) > 1 else ''}, "
            f"{call_ref(seq, 0)} to {call_ref(seq, len(calls) - 1)}"
            if calls
            else "made no calls"
        )
        raise RecallRefused(f"reply {seq} {made}: it has no call {_q(ref)}")
    call = calls[index]
    found = journal.result(seq, ref)
    if found is None:
        if journal.went_on(seq, record.agent):
            why = "you went on without it, so its result was never recorded"
        else:
            why = "it is still running (or the session stopped while it ran)"
        raise RecallRefused(f"call {ref} ({call.name}) has no result: {why}")
    result_seq, result = found
    head = [f"call {ref}: {call.name}", f"arguments: {call.arguments}"]
    head.append(f"result (seq {result_seq}): {result.status}")
    if result.changed:
        head.append(f"changed: {', '.join(result.changed)}")
    return "\n".join(head) + "\n" + result.content


def _page(text: str, ref: str, offset: int, limit: int) -> str:
    total = len(text)
    if offset > total:
        raise RecallRefused(
            f"offset {offset} is past the end of ref {_q(ref)}, whose text is {total} characters"
        )
    end = min(offset + limit, total)
    if offset == 0 and end == total:
        return text
    left = total - end
    if left:
        trailer = (
            f"[characters {offset}-{end} of {total}; {left} more: recall ref {_q(ref)} "
            f"with offset {end}]"
        )
    else:
        trailer = f"[characters {offset}-{end} of {total}: the end]"
    return f"{text[offset:end]}\n{trailer}"


# --- the journal, read where needed -----------------------------------------------------


class _Journal(msgspec.Struct):
    """A journal file through a read-only memory map (only the pages read are loaded):
    its last whole batch's end, records by seq, and searches after a seq."""

    path: Path
    data: mmap.mmap | bytes = b""
    last_seq: int = 0
    end: int = 0  # the offset just after the last whole batch

    def __enter__(self) -> _Journal:
        try:
            with self.path.open("rb") as file:
                if os.fstat(file.fileno()).st_size:
                    self.data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        except FileNotFoundError:
            pass  # a session that has not written a record yet
        self.last_seq, self.end = self._find_end()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if isinstance(self.data, mmap.mmap):
            self.data.close()

    def _find_end(self) -> tuple[int, int]:
        """The last line that is a good record ending a batch: its seq, and the offset
        after it. Usually the file's last line; a torn tail is stepped over."""
        data = self.data
        stop = data.rfind(b"\n") + 1  # a last piece without a newline is no record
        while stop:
            start = data.rfind(b"\n", 0, stop - 1) + 1
            line = data[start : stop - 1]
            if line_fault(line) is None and not line.endswith(MORE, 0, len(line) - CRC_SUFFIX_LEN):
                return self._seq_at(start), stop
            stop = start
        return 0, 0

    def _seq_at(self, start: int) -> int:
        """The seq the line at `start` begins with."""
        head = self.data[start : start + 40]
        comma = head.find(b",")
        try:
            if not head.startswith(SEQ_PREFIX) or comma == -1:
                raise ValueError
            return int(head[len(SEQ_PREFIX) : comma])
        except ValueError:
            raise JournalCorrupt(
                f"{self.path}: the line at byte {start} is not a journal record "
                "(`orchestrator sessions verify` says more)",
                path=self.path,
            ) from None

    def _start_of(self, seq: int) -> int:
        """Where the line of record `seq` (1 <= seq <= last_seq) starts: bisection over
        the bytes, each probe reading the seq of the line it lands in."""
        low, high = 0, self.end  # line starts; record `seq` starts in [low, high)
        while low < high:
            newline = self.data.rfind(b"\n", low, (low + high) // 2)
            start = low if newline == -1 else newline + 1
            found = self._seq_at(start)
            if found == seq:
                return start
            if found > seq:
                high = start
            elif (newline := self.data.find(b"\n", start, high)) != -1:
                low = newline + 1
            else:
                break  # a line that does not end before the next one starts: never whole
        raise JournalCorrupt(
            f"{self.path}: no line holds seq {seq}, below its last seq {self.last_seq} "
            "(`orchestrator sessions verify` says more)",
            path=self.path,
            seq=seq,
        )

    def record(self, seq: int) -> Record:
        """The record `seq`, checked and decoded."""
        return self._decode(self._start_of(seq))[1]

    def _decode(self, start: int) -> tuple[int, Record]:
        seq = self._seq_at(start)
        line = self.data[start : self.data.find(b"\n", start)]
        fault = line_fault(line)
        if fault is not None:
            raise JournalCorrupt(
                f"{self.path}: record seq {seq} {fault}", path=self.path, line=seq, seq=seq
            )
        return next(decode_records(self.path, (line,), seq))

    def _line_start(self, at: int) -> int:
        return self.data.rfind(b"\n", 0, at) + 1

    def result(self, seq: int, ref: str) -> tuple[int, CallResult] | None:
        """The `call_result` of call `ref` (made by the reply at `seq`) and its seq."""
        pattern = b'"ref":%s' % orjson.dumps(ref)  # a string's quotes inside a field are escaped
        at = self.data.find(pattern, self._start_of(seq), self.end)
        while at != -1:
            found, record = self._decode(self._line_start(at))
            if isinstance(record, CallResult) and record.ref == ref:
                return found, record
            at = self.data.find(pattern, self.data.find(b"\n", at), self.end)
        return None

    def went_on(self, seq: int, agent: str) -> bool:
        """Whether `agent` replied again, or its context started again, after `seq`."""
        after = self.data.find(b"\n", self._start_of(seq)) + 1
        who = orjson.dumps(agent)
        return any(
            self.data.find(b',"k":"%s","a":%s,' % (kind, who), after, self.end) != -1
            for kind in (b"assistant_replied", b"agent_started")
        )
