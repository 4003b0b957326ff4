"""`snapshot.json`: the state of a session as of one record of its journal, minus the
contexts (state/fold.py makes it and loads it: `SessionState.snapshot_json`,
`SessionState.from_snapshot`). Its types and its bytes, written and read by msgspec
alone; its layout is `SNAPSHOT_LAYOUT` (docs/session-format.md)."""

import functools
from typing import Literal

import msgspec

from orchestrator.loop.assessment import AgentProgress, RefusedCall
from orchestrator.loop.compaction import Breaker
from orchestrator.loop.todos import TodoItem, TodoList
from orchestrator.messages import Usage
from orchestrator.state.approvals import Approvals
from orchestrator.state.checkpoints import Checkpoints
from orchestrator.state.fallbacks import Fallbacks
from orchestrator.state.hooks import Hooked
from orchestrator.state.mailbox import MailboxSummary
from orchestrator.state.manifest import SessionStatus
from orchestrator.state.mcp import McpState
from orchestrator.state.plans import Plans
from orchestrator.state.settings import SessionSettings
from orchestrator.state.tasks import TaskRecord
from orchestrator.store.scan import JournalMark


class AgentSummary(msgspec.Struct, kw_only=True):
    """An agent's small state in a snapshot."""

    role: str
    start: int
    steps: int = 0
    usage: Usage = Usage()
    turn_open: bool = False
    message_count: int = 0  # in its live context (for `sessions show`, which does not fold)
    compactions: int = 0
    summary_calls: int = 0
    breaker: Breaker = Breaker()
    tokens: int = 0  # its live context's size, estimated (for `sessions show`)
    # The journal just before `start`'s record: a resume reads the file from there.
    start_mark: JournalMark | None = None


class GrantSummary(msgspec.Struct, kw_only=True):
    tool: str
    pattern: str = ""


class TodosSummary(msgspec.Struct, kw_only=True):
    """An agent's todo list in a snapshot."""

    goal: str = ""
    items: list[TodoItem] = msgspec.field(default_factory=list)
    changed_seq: int = 0
    refs: list[str] = msgspec.field(default_factory=list)

    @classmethod
    def of(cls, todos: TodoList) -> "TodosSummary":
        return cls(
            goal=todos.goal,
            items=list(todos.items.values()),
            changed_seq=todos.changed_seq,
            refs=sorted(todos.refs),
        )

    def load(self) -> TodoList:
        return TodoList.of(self.goal, self.items, changed_seq=self.changed_seq, refs=self.refs)


class Snapshot(msgspec.Struct, kw_only=True):
    """`snapshot.json`: the state as of journal record `seq`, minus the contexts. Written
    and read by msgspec alone (`encode_snapshot`, `decode_snapshot`)."""

    layout: Literal[4]
    seq: int
    status: SessionStatus = "running"
    agents: dict[str, AgentSummary] = msgspec.field(default_factory=dict)
    grants: list[GrantSummary] = msgspec.field(default_factory=list)
    mailbox: MailboxSummary = msgspec.field(default_factory=MailboxSummary)
    todos: dict[str, TodosSummary] = msgspec.field(default_factory=dict)
    progress: dict[str, AgentProgress] = msgspec.field(default_factory=dict)
    rounds: int = 0
    usage_by_model: dict[str, Usage] = msgspec.field(default_factory=dict)
    # The journal when the snapshot was taken, so a resume checks it up to there with
    # one CRC: `[seq, length in bytes, CRC-32 of those bytes]`.
    journal: JournalMark | None = None
    # The settings the session runs with (its last `settings` record); None before one.
    settings: SessionSettings | None = None
    tasks: list[TaskRecord] = msgspec.field(default_factory=list)
    # Calls refused for want of approval since the person last spoke (`_call_result`).
    refused: list[RefusedCall] = msgspec.field(default_factory=list)
    # Context windows learned from context-too-long errors, by model name (tokens).
    windows: dict[str, int] = msgspec.field(default_factory=dict)
    # What each agent's owner wrote to it, verbatim, the newest `SAID_KEPT` (`_heard`).
    said: dict[str, list[str]] = msgspec.field(default_factory=dict)
    # Every version of the plan and its decision (state/plans.py).
    plans: Plans = msgspec.field(default_factory=Plans)
    # Calls parked for a person's decision, and decisions not acted on yet
    # (state/approvals.py).
    approvals: Approvals = msgspec.field(default_factory=Approvals)
    # The model each fallback chain that moved is on (state/fallbacks.py).
    fallbacks: Fallbacks = msgspec.field(default_factory=Fallbacks)
    # Hooks' decisions not acted on yet, and `stop` continuations (state/hooks.py).
    hooks: Hooked = msgspec.field(default_factory=Hooked)
    # MCP tools' pinned definitions and each agent's loaded tools (state/mcp.py).
    mcp: McpState = msgspec.field(default_factory=McpState)
    # Workspace checkpoints, a restore begun, the fork link (state/checkpoints.py;
    # format 14).
    checkpoints: Checkpoints = msgspec.field(default_factory=Checkpoints)


@functools.cache
def _decoder() -> msgspec.json.Decoder[Snapshot]:
    return msgspec.json.Decoder(Snapshot)  # built on first use, as the records' decoder


def encode_snapshot(snapshot: Snapshot) -> bytes:
    """`snapshot.json`'s bytes."""
    return msgspec.json.encode(snapshot)


def decode_snapshot(data: bytes) -> Snapshot:
    """A snapshot from `snapshot.json`'s bytes; `msgspec.ValidationError` (a
    `DecodeError`) when they are not one of this layout."""
    return _decoder().decode(data)
