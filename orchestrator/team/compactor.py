"""Compaction at work: when an agent's context nears its model's window (or the provider
says it is too long), prune old tool outputs, or ask the compactor model for a summary,
and journal a checkpoint the agent's context starts again from, with its anchors (goal,
todos, tasks, mail, files) rebuilt from the fold. The judgement is `loop/`'s
(`loop/compacting.py` decides what a compaction does); this module gathers the situation,
performs the decision (the summary calls, in the background or not) and emits the
record. It also serves the compactions asked for by hand on a live session
(`Team.compact`).

A compaction is one record (`ContextCompacted`): a crash before it leaves the old
context, and the retry makes the same checkpoint (the summary calls are numbered by the
agent's journaled count) or a new one, never half of one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import assert_never

import msgspec
import trio

from orchestrator.errors import CompactionFailed, ContextTooLong, NothingToCompact
from orchestrator.loop.anchors import Anchors
from orchestrator.loop.compacting import (
    Checkpoint,
    PruneOnly,
    Refuse,
    Refused,
    Situation,
    Summarise,
    fit,
    plan,
)
from orchestrator.loop.compaction import (
    CompactionStarted,
    ContextCompacted,
    Reason,
    Window,
    trigger,
    window_of,
)
from orchestrator.messages import Message
from orchestrator.models.base import COMPACTOR, Model
from orchestrator.state.context import AgentContext
from orchestrator.state.events import EventSink, Notice
from orchestrator.state.settings import SessionSettings
from orchestrator.team.anchoring import gather
from orchestrator.team.hooks import TeamHooks
from orchestrator.team.port import SessionLike
from orchestrator.team.summaries import Summary, summarise
from orchestrator.tools.workspace import Workspace


class Compactor:
    """Compacts the contexts of one team's agents.

    A summary triggered below the whole window runs in the background (in `nursery`): the
    agent goes on, and the checkpoint is made at its next round boundary, which waits
    for the summary if it is not done. Always the next boundary, so a session compacts
    at the same place however fast the summary comes (a resumed one, a scripted one).
    Pruning alone, a context at its whole window, a context-too-long error and a
    compaction by hand do not wait: the checkpoint is made at once.

    A compaction asked for by hand on a live session (`ask`) is made where `maybe` runs:
    in the agent's own task, at a round boundary, before mail is delivered (made anywhere
    else, a reply, a delivery or a note added meanwhile would be lost with the old
    context)."""

    def __init__(
        self,
        session: SessionLike,
        sink: EventSink,
        workspace: Workspace,
        models: Callable[[str], Model],
        window: Callable[[str], Window | None],
        files: Callable[[str], set[str]],
        nursery: trio.Nursery | None = None,
        *,
        settings: SessionSettings,
        hooks: TeamHooks | None = None,
    ) -> None:
        self._session = session
        self._hooks = hooks  # `pre_compact` hooks' text is kept among the anchors
        self._settings = settings  # the session's, as journaled (the team's `Seat`)
        self._sink = sink
        self._workspace = workspace
        self._models = models  # by role, each call taking a model slot
        self._window = window  # the configured or known window of a role's model
        self._files = files  # the files an agent's tools changed (team/writes.py)
        self._nursery = nursery  # where summaries run in the background (None: never)
        self._pending: dict[str, _Background] = {}  # agent -> its summary in the background
        self._asked: dict[str, _Asked] = {}  # agent -> its compaction asked for by hand
        self._closed = False  # the team closed: no agent takes another round

    def _known(self, role: str) -> tuple[Window | None, int, int | None]:
        """What is known of the window of `role`'s model: the configured or known one,
        the one learned from a context-too-long error (0: none), and the session's
        `max_tokens`."""
        windows = self._session.state.windows  # (most sessions learned none: no name asked)
        learned = windows.get(self._models(role).name, 0) if windows else 0
        return self._window(role), learned, self._settings.max_tokens

    def usable(self, role: str) -> int:
        """The usable input of `role`'s model's window, as compaction measures it (0: not
        known): what a turn's usage record reports its context against."""
        window = window_of(*self._known(role))
        return window.usable if window is not None else 0

    async def maybe(self, context: AgentContext) -> None:
        """At a round boundary, with none of the agent's calls open: make the compaction
        asked for by hand, or the checkpoint of a summary started at the last boundary,
        or compact `context` if it reached its share of the window."""
        asked = self._asked.pop(context.id, None)
        if asked is not None:
            await self._by_hand(context, asked)
            return
        pending = self._pending.pop(context.id, None)
        if pending is not None:
            await pending.done.wait()
            if pending.summary is not None and pending.still_fits(context):
                await self._finish(context, pending.job, pending.summary)
                return
        fraction = self._settings.compact_at
        known, learned, max_tokens = self._known(context.role)
        count, breaker = context.count(), context.breaker
        due = trigger(count, known, learned, max_tokens, breaker, context.steps, fraction=fraction)
        if due is not None:
            await self.compact(context, due.reason, background=not due.wait)

    async def ask(self, agent: str) -> ContextCompacted | None:
        """Have `agent`'s context compacted at its next round boundary (several askers
        share one compaction); None if the team closes first. An asker cancelled before
        the compaction began takes its ask back (unless another still waits)."""
        if self._closed:
            return None
        asked = self._asked.setdefault(agent, _Asked())
        asked.waiting += 1
        try:
            await asked.done.wait()
        finally:
            asked.waiting -= 1
            if not asked.waiting and self._asked.get(agent) is asked:
                del self._asked[agent]  # (not begun: `maybe` pops it when it begins)
        if asked.error is not None:
            raise asked.error
        return asked.record

    async def _by_hand(self, context: AgentContext, asked: _Asked) -> None:
        self.drop_pending(context.id)  # a summary under way: this compaction supersedes it
        try:
            asked.record = await self.compact(context, "by_hand")
        except Exception as exc:
            asked.error = exc
            if not isinstance(exc, CompactionFailed | NothingToCompact):
                raise  # (the agent's round fails as it would have)
        finally:
            asked.done.set()

    def close(self) -> None:
        """The team is closing: no agent takes another round, so the compactions still
        asked for by hand are not made (their askers get None)."""
        self._closed = True
        for asked in self._asked.values():
            asked.done.set()
        self._asked.clear()

    def drop_pending(self, agent: str) -> None:
        """Cancel the summary under way for `agent`, if any: a compaction made now
        supersedes it."""
        pending = self._pending.pop(agent, None)
        if pending is not None:
            pending.scope.cancel()

    async def abandon(self) -> None:
        """The work is done: summaries still under way are not needed (no agent takes
        another round); each is stopped, and said so, once."""
        for agent in list(self._pending):
            self.drop_pending(agent)
            await self._sink.emit(
                Notice(
                    agent=agent,
                    message=f"the compaction of {agent} begun in the background was dropped: "
                    "the work ended before it was needed",
                )
            )

    async def too_long(self, context: AgentContext, error: ContextTooLong) -> None:
        """The provider refused the agent's request as too long: learn the window it
        stated (else the failed request's size is an upper bound), then compact."""
        self.drop_pending(context.id)  # it aimed at a window that proved too large
        await self.compact(context, "too_long", refused=Refused(error.limit, error.requested))

    async def compact(
        self,
        context: AgentContext,
        reason: Reason,
        *,
        refused: Refused | None = None,
        background: bool = False,
    ) -> ContextCompacted | None:
        """Compact `context` and journal the checkpoint; with `background`, a summary
        runs while the agent goes on and the checkpoint waits for its next round
        boundary (None is returned). `refused`: what the provider's context-too-long
        error said of the window. Raises `CompactionFailed` when even the smallest
        context it can make does not fit the window."""
        job = await self._plan(context, reason, refused)
        if not isinstance(job.decision, Summarise):
            return await self._finish(context, job, None)
        if background and self._nursery is not None:
            pending = self._pending[context.id] = _Background(job)
            self._nursery.start_soon(self._in_background, context, pending)
            return None
        return await self._finish(context, job, await self._summary(context, job))

    async def _plan(self, context: AgentContext, reason: Reason, refused: Refused | None) -> _Job:
        """The situation gathered and `loop/`'s decision on it."""
        known, learned, max_tokens = self._known(context.role)
        count, messages, length = context.count(), context.view(), len(context.messages)
        files = tuple(sorted(self._files(context.id)))
        anchors = await gather(self._session.state, context, files, self._workspace.root)
        if self._hooks:
            kept = await self._hooks.before_compaction(context.id, context.compactions, reason)
            anchors = msgspec.structs.replace(anchors, hooks=kept)
        settings = self._settings
        decision = plan(
            Situation(
                agent=context.id,
                reason=reason,
                messages=messages,
                count=count,
                known=known,
                learned=learned,
                max_tokens=max_tokens,
                refused=refused,
                anchors=anchors,
                anchor_share=settings.anchor_share,
                keep_recent=settings.keep_recent,
                keep_outputs=settings.keep_outputs,
            )
        )
        said = decision.figures
        await self._sink.emit(
            CompactionStarted(
                agent=context.id, reason=reason, tokens=said.tokens, usable=said.usable
            )
        )
        if isinstance(decision, Refuse):
            raise _refused(decision)
        model = self._models(context.role).name
        return _Job(decision, model, files, anchors, context.start, context.messages, length)

    async def _in_background(self, context: AgentContext, pending: _Background) -> None:
        try:
            with pending.scope:
                pending.summary = await self._summary(context, pending.job)
        finally:
            pending.done.set()

    async def _summary(self, context: AgentContext, job: _Job) -> Summary:
        """The summary of the decision's head, in the compactor model's slots."""
        assert isinstance(job.decision, Summarise)
        return await summarise(self._models(COMPACTOR), context, job.decision.head, job.files)

    async def _finish(
        self, context: AgentContext, job: _Job, summary: Summary | None
    ) -> ContextCompacted:
        """The checkpoint of `job`, with the anchors as they are now and whatever the
        agent added since it was planned, journaled."""
        files, anchors = job.files, job.anchors
        if summary is not None:  # a summary takes a while: the anchors as they are now
            files = tuple(sorted(self._files(context.id)))
            now = await gather(self._session.state, context, files, self._workspace.root)
            anchors = msgspec.structs.replace(now, hooks=anchors.hooks)
        said = summary if summary is not None else Summary("", "summary")
        made = fit(
            context.id,
            job.decision,
            anchors,
            context.messages[job.length :],
            said.text,
            said.method,
        )
        if isinstance(made, Refuse):
            raise _refused(made)
        record = self._record(context, job, made, said, files, anchors)
        await self._sink.emit(record, durable=True)
        if context.breaker.paused(context.steps):
            await self._sink.emit(
                Notice(
                    agent=context.id,
                    message=f"automatic compaction of {context.id} paused until round "
                    f"{context.breaker.paused_until}: its last compactions freed too little "
                    "(a context-too-long error still compacts)",
                )
            )
        return record

    def _record(
        self,
        context: AgentContext,
        job: _Job,
        made: Checkpoint,
        summary: Summary,
        files: Sequence[str],
        anchors: Anchors,
    ) -> ContextCompacted:
        learned = job.decision.figures.learned
        return ContextCompacted(
            agent=context.id,
            messages=made.messages,
            reason=job.decision.figures.reason,
            method=made.method,
            before=context.count().tokens,
            after=made.after,
            pruned=len(job.decision.pruned.refs),
            dropped=made.dropped,
            summary_chars=len(summary.text),
            attempts=summary.attempts,
            usage=summary.usage,
            model=summary.model,
            window_model=job.model if learned is not None else "",
            window=learned.context if learned is not None else 0,
            files=tuple(files),
            read=tuple(anchors.read),
            goal=context.goal,
            min_freed=self._settings.min_freed,
        )


def _refused(refusal: Refuse) -> CompactionFailed | NothingToCompact:
    match refusal.why:
        case "too_small":
            return CompactionFailed(refusal.message, provider="compaction")
        case "nothing":
            return NothingToCompact(refusal.message)
        case _:
            assert_never(refusal.why)


class _Job(msgspec.Struct, frozen=True):
    """A compaction decided: `loop/`'s decision, and what its checkpoint is made with."""

    decision: PruneOnly | Summarise
    model: str  # the agent's model, whose window the decision may have learned
    files: tuple[str, ...]  # the files the agent changed, and its anchors, when decided
    anchors: Anchors
    start: int  # the context it was made of: its checkpoint's
    messages: list[Message]  # list, as long as `length` then
    length: int


class _Background:
    """A summary under way while the agent goes on; its checkpoint waits for the agent's
    next round boundary."""

    def __init__(self, job: _Job) -> None:
        self.job = job
        self.done = trio.Event()
        self.scope = trio.CancelScope()
        self.summary: Summary | None = None  # once done, unless it was cancelled

    def still_fits(self, context: AgentContext) -> bool:
        """Whether the context is still the one planned on, with messages appended only
        (no checkpoint made meanwhile), and the summary came."""
        return (
            context.start == self.job.start
            and context.messages is self.job.messages
            and len(context.messages) >= self.job.length
            and not self.scope.cancelled_caught
            and self.summary is not None
            and bool(self.summary.text)
        )


class _Asked(msgspec.Struct):
    """A compaction asked for by hand, until the agent's next round boundary makes it."""

    done: trio.Event = msgspec.field(default_factory=trio.Event)
    record: ContextCompacted | None = None
    error: Exception | None = None
    waiting: int = 0  # askers still waiting: when the last gives up, the ask is dropped
