"""Session state as a fold over journal records, and its snapshot.

`SessionState.apply` is the only place that turns a record into state, so a live run
(which folds each record as it journals it) and a resume (which folds them again) cannot
disagree. It composes the folds of the small state (`small.py`, which compose those of
the task registry, the mailbox and the plans) with the conversation's (`context.py`).

The snapshot holds positions, not copies: the small state (statuses, counters, the task
records, the live mail) and, per agent, the seq where its live context starts. Resume
loads it and folds the journal once: records before the snapshot's seq only rebuild the
contexts (`apply_context`), records after it are folded whole (`apply`).
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec

from orchestrator.layout import SNAPSHOT_LAYOUT as SNAPSHOT_LAYOUT
from orchestrator.messages import plain
from orchestrator.state.context import CONTEXT_FOLDS, AgentContext
from orchestrator.state.events import PermissionGranted, Record
from orchestrator.state.mailbox import USER as USER
from orchestrator.state.mailbox import Mailbox
from orchestrator.state.small import SMALL_FOLDS, SmallState
from orchestrator.state.snapshot import (
    AgentSummary,
    GrantSummary,
    Snapshot,
    TodosSummary,
    decode_snapshot,
    encode_snapshot,
)
from orchestrator.state.tasks import Registry
from orchestrator.store.scan import JournalMark


class SessionState(SmallState):
    """The fold of a session's journal up to `seq`."""

    def apply(self, seq: int, record: Record) -> None:
        """Fold one record: small state and context."""
        self.seq = seq
        kind = type(record)
        small = SMALL_FOLDS.get(kind)
        if small is not None:
            small(self, seq, record)
        fold = CONTEXT_FOLDS.get(kind)
        if fold is not None:
            fold(self.agent(record.agent), seq, record)

    def apply_context(self, seq: int, record: Record) -> None:
        """Fold one record into its agent's context only (resume, before the snapshot's
        seq: the small state is already the snapshot's)."""
        fold = CONTEXT_FOLDS.get(type(record))
        if fold is not None:
            fold(self.agent(record.agent), seq, record)

    def snapshot(self, *, journal: JournalMark | None = None) -> Snapshot:
        """The snapshot of this state, apart from it (`sessions verify` compares it with
        the file's): what `snapshot_json` writes, read back."""
        return decode_snapshot(self.snapshot_json(journal))

    def snapshot_json(self, journal: JournalMark | None = None) -> bytes:
        """`snapshot.json` for this state. `journal` is the journal's mark at `seq`, if
        known. The snapshot it encodes shares the state's objects, so it is encoded here,
        before anything folds again."""
        snapshot = Snapshot(
            layout=SNAPSHOT_LAYOUT,
            seq=self.seq,
            status=self.status,
            agents={
                agent_id: AgentSummary(
                    role=a.role,
                    start=a.start,
                    steps=a.steps,
                    usage=a.usage,
                    turn_open=a.turn_open,
                    message_count=len(a.messages),
                    compactions=a.compactions,
                    summary_calls=a.summary_calls,
                    breaker=a.breaker,
                    tokens=a.count().tokens,
                    start_mark=a.start_mark,
                )
                for agent_id, a in self.agents.items()
            },
            grants=[GrantSummary(tool=g.tool, pattern=g.pattern) for g in self.grants],
            mailbox=self.mailbox.summary(),
            todos={agent: TodosSummary.of(t) for agent, t in self.todos.items()},
            progress=self.progress,
            rounds=self.rounds,
            usage_by_model=self.usage_by_model,
            journal=journal,
            settings=self.settings,
            tasks=list(self.tasks.tasks.values()),
            refused=self.refused,
            windows=self.windows,
            said=self.said,
            plans=self.plans,
            approvals=self.approvals,
            fallbacks=self.fallbacks,
            hooks=self.hooks,
            mcp=self.mcp,
            checkpoints=self.checkpoints,
        )
        return encode_snapshot(snapshot)

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot) -> SessionState:
        """The small state of `snapshot`, with every context still to be rebuilt."""
        state = cls()
        state.seq = snapshot.seq
        state.status = snapshot.status
        state.grants = [
            PermissionGranted(agent="", tool=g.tool, pattern=g.pattern) for g in snapshot.grants
        ]
        state.tasks = Registry.load(snapshot.tasks)
        state.mailbox = Mailbox.load(snapshot.mailbox)
        state.todos = {agent: summary.load() for agent, summary in snapshot.todos.items()}
        state.progress = {agent: copy.copy(p) for agent, p in snapshot.progress.items()}
        state.rounds = snapshot.rounds
        state.settings = snapshot.settings
        state.usage_by_model = dict(snapshot.usage_by_model)
        state.refused = list(snapshot.refused)
        state.windows = dict(snapshot.windows)
        state.said = {agent: list(said) for agent, said in snapshot.said.items()}
        state.plans = copy.deepcopy(snapshot.plans)
        state.approvals = copy.deepcopy(snapshot.approvals)
        state.fallbacks = copy.deepcopy(snapshot.fallbacks)
        state.hooks = copy.deepcopy(snapshot.hooks)
        state.mcp = copy.deepcopy(snapshot.mcp)
        state.checkpoints = copy.deepcopy(snapshot.checkpoints)
        for agent_id, summary in snapshot.agents.items():
            state.agents[agent_id] = AgentContext(
                id=agent_id,
                role=summary.role,
                start=summary.start,
                steps=summary.steps,
                usage=summary.usage,
                turn_open=summary.turn_open,
                breaker=summary.breaker,
                compactions=summary.compactions,
                summary_calls=summary.summary_calls,
                start_mark=summary.start_mark,
            )
        return state

    def context_start(self) -> int:
        """The first seq any agent's live context needs (1 with no agents yet)."""
        return min((a.start for a in self.agents.values()), default=1)

    def context_start_mark(self) -> JournalMark | None:
        """The journal's mark just before `context_start()`, when known: where a resume
        may start reading the file."""
        first = self.context_start()
        for context in self.agents.values():
            mark = context.start_mark
            if context.start == first and mark is not None and mark.seq == first - 1:
                return mark
        return None

    def describe(self) -> dict[str, Any]:
        """Everything, contexts included, as plain data (for tests and `sessions show`)."""
        return {
            "seq": self.seq,
            "status": self.status,
            "grants": [(g.tool, g.pattern) for g in self.grants],
            "tasks": self.tasks.dump(),
            "mailbox": msgspec.to_builtins(self.mailbox.summary()),
            "todos": {agent: t.view() for agent, t in self.todos.items()},
            "progress": msgspec.to_builtins(self.progress),
            "rounds": self.rounds,
            "refused": msgspec.to_builtins(self.refused),
            "windows": dict(self.windows),
            "said": {agent: list(said) for agent, said in self.said.items()},
            "plans": msgspec.to_builtins(self.plans),
            "approvals": msgspec.to_builtins(self.approvals),
            "fallbacks": msgspec.to_builtins(self.fallbacks),
            "hooks": msgspec.to_builtins(self.hooks),
            "mcp": msgspec.to_builtins(self.mcp),
            "checkpoints": msgspec.to_builtins(self.checkpoints),
            "agents": {
                agent_id: {
                    "role": a.role,
                    "start": a.start,
                    "steps": a.steps,
                    "usage": plain(a.usage),
                    "turn_open": a.turn_open,
                    "messages": plain(a.messages),
                    "open_calls": plain(a.open_calls),
                    "effects": sorted(a.effects),
                    "compactions": a.compactions,
                    "summary_calls": a.summary_calls,
                    "breaker": plain(a.breaker),
                }
                for agent_id, a in self.agents.items()
            },
        }
