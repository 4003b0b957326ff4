"""Deferred approvals: a call whose approver answered "later" (`Later`) is parked until a
person decides, and the decision is journaled before the call runs.

Two records: `approval_parked` (the call `ref` of `agent` waits for a decision; it has
no result and has not started) and `approval_decided` (the person's decision on it,
journaled before the call is run again). `Approvals` is their fold: the parked calls not
decided yet, and the decisions whose call has no result yet. A call's result (its
`call_result` record) ends both. So a session killed between the decision and the call
resumes with the decision and runs the call once; one killed after the call started
follows the rules of any started call (docs/session-format.md).

A parked call's id is `<agent>:<ref>` (`main:12.0`): stable, unique in the session, the
key of `resume(..., approvals=...)` and of `resume --approve-call`.
"""

from collections.abc import Callable
from typing import Any

import msgspec

from orchestrator.eventbase import EventBase


def approval_id(agent: str, ref: str) -> str:
    """The id of `agent`'s parked call `ref`."""
    return f"{agent}:{ref}"


class ApprovalParked(EventBase, frozen=True, tag="approval_parked"):
    """Record: the call `ref` of `agent` waits for a person's decision (its approver
    answered `Later`)."""

    ref: str

    @property
    def id(self) -> str:
        return approval_id(self.agent, self.ref)


class ApprovalDecided(EventBase, frozen=True, tag="approval_decided"):
    """Record: the person's decision on the parked call `ref` of `agent`: `allow`, or a
    no with the `reason` the model reads ("" for a plain no). Journaled before the call
    runs."""

    ref: str
    allow: bool = False
    reason: str = ""

    @property
    def id(self) -> str:
        return approval_id(self.agent, self.ref)


class RemoteRefused(EventBase, frozen=True, tag="remote_refused"):
    """Record: a call of the task `agent` on a worker (`--engine dbos --workers`) that its
    rules ask about was refused because nobody could be asked here (the session's
    approver answered `Unasked`: no terminal, no `--yes`). Counted with the session's own
    refused calls, so a headless session ends `blocked` for it as for a local task's."""

    tool: str
    arguments: str = ""


ApprovalRecords = ApprovalParked | ApprovalDecided | RemoteRefused


class Parked(msgspec.Struct, frozen=True):
    """A parked call as the fold keeps it."""

    agent: str
    ref: str
    seq: int = 0  # its `approval_parked` record's

    @property
    def id(self) -> str:
        return approval_id(self.agent, self.ref)


class Decision(msgspec.Struct, frozen=True):
    allow: bool
    reason: str = ""


class Approvals(msgspec.Struct):
    """The parked calls not yet decided, and the decisions not yet acted on (their call
    has no result yet), by id."""

    pending: dict[str, Parked] = msgspec.field(default_factory=dict)
    decided: dict[str, Decision] = msgspec.field(default_factory=dict)

    def of(self, agent: str) -> list[Parked]:
        """`agent`'s parked calls, oldest first."""
        return [p for p in self.pending.values() if p.agent == agent]

    def call_done(self, agent: str, ref: str) -> None:
        """The call has its result: nothing about it is pending any more."""
        key = approval_id(agent, ref)
        self.pending.pop(key, None)
        self.decided.pop(key, None)


def _parked(approvals: Approvals, seq: int, record: ApprovalParked) -> None:
    approvals.decided.pop(record.id, None)
    approvals.pending[record.id] = Parked(record.agent, record.ref, seq)


def _decided(approvals: Approvals, seq: int, record: ApprovalDecided) -> None:
    approvals.pending.pop(record.id, None)
    approvals.decided[record.id] = Decision(record.allow, record.reason)


APPROVAL_FOLDS: dict[type, Callable[[Approvals, int, Any], None]] = {
    ApprovalParked: _parked,
    ApprovalDecided: _decided,
}
