"""Approvals for tasks on workers: a call that the permission rules ask about, made by a
task on an `orchestrator worker` run without `--yes`, is put to the task's session, whose
approver (the person at its terminal, the library's `approve`) answers it, as it answers
its own tasks' calls (docs/engine.md).

The question is a row of the engine's database (`orchestrator_approvals`, keyed by the
task and the call's id), the answer is written on it: a worker that takes the task over
after a crash asks the same call again and finds the answer, and a session resumed finds
the questions still open. The worker looks for the answer every `LOOK` seconds; the
session's follower looks for new questions with its look at the workflows (every second).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import trio

from orchestrator.engine.retry import Patience
from orchestrator.engine.store import Store
from orchestrator.messages import ToolCall
from orchestrator.state.approvals import RemoteRefused
from orchestrator.state.events import PermissionGranted
from orchestrator.team.port import TaskPort
from orchestrator.tools.permissions import (
    Answer,
    Approver,
    Denied,
    Grant,
    Later,
    PermissionPolicy,
    Unasked,
)

LOOK = 0.5  # seconds between a worker's looks for the answer to its question


class _Answer(msgspec.Struct, omit_defaults=True):
    """An `Answer` as the database keeps it."""

    allow: bool = False
    reason: str = ""  # a no with its reason (`Denied`)
    unasked: bool = False  # nobody could be asked (`Unasked`)
    grant_tool: str = ""  # a yes that allows more (`Grant`)
    grant_pattern: str = ""


_encode = msgspec.json.Encoder().encode
_decode_answer = msgspec.json.Decoder(_Answer).decode
_decode_call = msgspec.json.Decoder(ToolCall).decode


def encode_answer(answer: Answer) -> bytes:
    match answer:
        case Grant(tool=tool, pattern=pattern):
            return _encode(_Answer(allow=True, grant_tool=tool, grant_pattern=pattern))
        case Denied(reason=reason):
            return _encode(_Answer(reason=reason))
        case Unasked() | Later():
            # (A task on a worker never parks a call: "later" is nobody to ask now.)
            return _encode(_Answer(unasked=True))
        case _:
            return _encode(_Answer(allow=bool(answer)))


def decode_answer(data: bytes) -> Answer:
    answer = _decode_answer(data)
    if answer.grant_tool:
        return Grant(answer.grant_tool, answer.grant_pattern)
    if answer.unasked:
        return Unasked()
    if answer.reason:
        return Denied(answer.reason)
    return answer.allow


def decode_call(request: bytes) -> ToolCall:
    return _decode_call(request)


def ask_the_session(store: Store, db: Patience, key: str) -> Callable[[str, str], Approver]:
    """The approvers of the team of task `key` (`<session>/<task>`) on a worker
    (`RunSettings.approve_for`): each call is put to the session, and waited for."""
    session = key.rsplit("/", 1)[0]

    def approver_for(agent: str, who: str) -> Approver:
        async def ask(call: ToolCall) -> Answer:
            approval = f"{key}:{call.id}"
            answer = await db.call(store.ask, approval, session, key, _encode(call))
            while answer is None:
                await trio.sleep(LOOK)
                answer = await db.call(store.answer_of, approval)
            return decode_answer(answer)

        return ask

    return approver_for


class Questions:
    """The session's side: the questions of its tasks on workers, each put to its
    approver once (through the task's port), and the answer written for the worker."""

    def __init__(self, store: Store, db: Patience, nursery: trio.Nursery) -> None:
        self._store = store
        self._db = db
        self._nursery = nursery
        self._asked: set[str] = set()

    async def look(self, session_id: str, port_of: Callable[[str], TaskPort | None]) -> None:
        """Put the questions not yet answered of the tasks `port_of` knows."""
        for approval, key, request in await self._db.call(self._store.unanswered, session_id):
            port = port_of(key.rsplit("/", 1)[1])
            if port is not None and approval not in self._asked:
                self._asked.add(approval)
                task_id = key.rsplit("/", 1)[1]
                self._nursery.start_soon(self._ask, port, task_id, approval, decode_call(request))

    async def _ask(self, port: TaskPort, task_id: str, approval: str, call: ToolCall) -> None:
        """One session, one set of answers: a call that a grant answered for any of the
        session's tasks allows is allowed without asking; a `Grant` answered here is the
        session's (journaled), and a call refused for want of anyone to ask is counted
        with the session's refused calls (journaled)."""
        answer: Answer
        if PermissionPolicy().decide(call, read_only=False, grants=port.state.grants) == "allow":
            answer = True
        else:
            answer = await port.turns.approve(task_id, call)
            if isinstance(answer, Grant):
                granted = PermissionGranted(agent=task_id, tool=answer.tool, pattern=answer.pattern)
                await port.events.record(granted)
            elif isinstance(answer, Unasked):
                refused = RemoteRefused(agent=task_id, tool=call.name, arguments=call.arguments)
                await port.events.record(refused)
        await self._db.call(self._store.answer, approval, encode_answer(answer))
