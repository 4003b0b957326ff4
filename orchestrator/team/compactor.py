"""Compaction at work: when an agent's context nears its model's window (or the provider
says it is too long), prune old tool outputs, or ask the compactor model for a summary,
and journal a checkpoint the agent's context starts again from, with its anchors (goal,
todos, tasks, mail, files) rebuilt from the fold. The judgement is `loop/`'s; this
module gathers the values, makes the model calls and emits the record.

A compaction is one record (`ContextCompacted`): a crash before it leaves the old
context, and the retry makes the same checkpoint (the summary calls are numbered by the
agent's journaled count) or a new one, never half of one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import trio

from orchestrator.errors import CompactionFailed, ContextTooLong, ModelError, NothingToCompact
from orchestrator.loop import anchors as anchor_text
from orchestrator.loop.anchors import Anchors
from orchestrator.loop.compaction import (
    CompactionStarted,
    ContextCompacted,
    Method,
    Reason,
    Window,
    due,
    window_of,
)
from orchestrator.loop.pruning import Pruned, cut_points, prune, recent_start
from orchestrator.loop.summary import (
    fallback_summary,
    missing_sections,
    repair_request,
    summary_request,
)
from orchestrator.messages import (
    AssistantMessage,
    Message,
    MessageView,
    SystemMessage,
    Usage,
    UserMessage,
)
from orchestrator.models.base import COMPACTOR, Model, ModelRequest, collect
from orchestrator.state.context import AgentContext
from orchestrator.state.events import EventSink, Notice
from orchestrator.team.anchoring import SUMMARY_HEADER, facts, gather
from orchestrator.team.port import SessionLike
from orchestrator.tools.workspace import Workspace

PRUNED_ENOUGH = 0.5
"""Pruning alone will do when it leaves the context under this share of the usable
input."""
FLOOR_SUMMARY = 400
"""Characters at least of any summary, for the check that one could fit at all."""
ATTEMPTS = 2
"""Summary calls that fail (an error, or sections missing) before the fallback."""


class Compactor:
    """Compacts the contexts of one team's agents.

    A summary triggered below the whole window runs in the background (in `nursery`): the
    agent goes on, and the checkpoint is made at its next round boundary, which waits
    for the summary if it is not done. Always the next boundary, so a session compacts
    at the same place however fast the summary comes (a resumed one, a scripted one).
    Pruning alone, a context at its whole window, a context-too-long error and a
    compaction by hand do not wait: the checkpoint is made at once."""

    def __init__(
        self,
        session: SessionLike,
        sink: EventSink,
        workspace: Workspace,
        models: Callable[[str], Model],
        window: Callable[[str], Window | None],
        files: Callable[[str], set[str]],
        nursery: trio.Nursery | None = None,
    ) -> None:
        self._session = session
        self._sink = sink
        self._workspace = workspace
        self._models = models  # by role, each call taking a model slot
        self._window = window  # the configured or known window of a role's model
        self._files = files  # the files an agent's tools changed (team/writes.py)
        self._nursery = nursery  # where summaries run in the background (None: never)
        self._pending: dict[str, _Plan] = {}  # agent -> its summary in the background

    def window(self, role: str) -> tuple[Window | None, str]:
        """The window of `role`'s model (a learned one, if smaller), and its name. Where
        the output a model may write is not known, the session's `max_tokens` is kept
        free for it (a server such as vLLM counts it against the window)."""
        name = self._models(role).name
        settings = self._session.state.settings
        learned = self._session.state.windows.get(name, 0)
        max_tokens = settings.max_tokens if settings is not None else None
        return window_of(self._window(role), learned, max_tokens), name

    async def maybe(self, context: AgentContext) -> None:
        """At a round boundary, with none of the agent's calls open: make the checkpoint
        of a summary started at the last one, or compact `context` if it reached its
        share of the window."""
        pending = self._pending.pop(context.id, None)
        if pending is not None:
            await pending.done.wait()
            if pending.still_fits(context):
                await self._finish(context, pending)
                return
        window, _ = self.window(context.role)
        if window is None:
            return
        settings = self._session.state.settings
        fraction = settings.compact_at if settings is not None else 0.8
        count = context.count()
        reason = due(count, window, context.breaker, context.steps, fraction=fraction)
        if reason is not None:
            await self.compact(context, reason, background=count.share_of(window) < 1.0)

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
        known, name = self.window(context.role)
        tokens = context.count().tokens
        stated = Window.from_failure(error.limit, error.requested or tokens)
        # The output the model may write, but never most of a small window learned.
        output = min(known.output if known is not None else 0, stated.context // 4)
        learned = Window(stated.context, output)
        if known is not None and known.context <= learned.context:
            # The provider refused what the window should hold: the estimate runs low,
            # so what failed is the bound.
            learned = Window(min(known.context, tokens), output)
        await self.compact(context, "too_long", learned=(name, learned))

    async def compact(
        self,
        context: AgentContext,
        reason: Reason,
        *,
        learned: tuple[str, Window] | None = None,
        background: bool = False,
    ) -> ContextCompacted | None:
        """Compact `context` and journal the checkpoint; with `background`, a summary
        runs while the agent goes on and the checkpoint waits for its next round
        boundary (None is returned). Raises `CompactionFailed` when even the smallest
        context it can make does not fit the window."""
        plan = await self._plan(context, reason, learned)
        if plan.summarised:
            if background and self._nursery is not None:
                self._pending[context.id] = plan
                self._nursery.start_soon(self._summary_of, context, plan)
                return None
            await self._summary_of(context, plan)
        return await self._finish(context, plan)

    async def _plan(
        self, context: AgentContext, reason: Reason, learned: tuple[str, Window] | None
    ) -> _Plan:
        """What the compaction will do, decided now: the pruned context, and whether it
        is enough or which part a summary replaces."""
        window = learned[1] if learned is not None else self.window(context.role)[0]
        count = context.count()
        ratio = count.chars_per_token
        before = count.tokens
        usable = window.usable if window is not None else 0
        await self._sink.emit(
            CompactionStarted(agent=context.id, reason=reason, tokens=before, usable=usable)
        )
        if usable == 0:  # no window known (by hand): aim at half the context
            usable = max(before, 1)
        limits = self._limits(usable, ratio)
        messages = [m for m in context.view() if not _is_anchor(m)]
        pruned = prune(messages, keep_chars=limits.outputs)
        plan = _Plan(context, reason, learned, limits, ratio, usable, pruned)
        plan.files = sorted(self._files(context.id))
        plan.anchor, plan.anchors = await self._anchor(context, plan.files, limits)
        anchor = plan.anchor
        if _chars([*pruned.messages, anchor]) <= limits.pruned_enough and reason != "by_hand":
            return plan
        system: list[Message] = [m for m in pruned.messages[:1] if isinstance(m, SystemMessage)]
        if _chars([*system, anchor]) + FLOOR_SUMMARY > limits.usable:
            # No summary can help: say so before paying for one.
            floor = _chars([*system, anchor]) + FLOOR_SUMMARY
            raise _too_small(context, round(floor / ratio), usable)
        plan.system = system
        plan.recent = max(recent_start(pruned.messages, limits.recent), len(system))
        if reason == "by_hand" and plan.recent == len(system) and not pruned.refs:
            raise NothingToCompact(
                f"the context of {context.id} is all last turns ({count.tokens:,} tokens) "
                "with no old output to prune: a summary would only add to it"
            )
        plan.summarised = True
        return plan

    async def _summary_of(self, context: AgentContext, plan: _Plan) -> None:
        """The summary of the plan's head: the model's, else the fallback."""
        head = plan.pruned.messages[len(plan.system) : plan.recent]
        try:
            with plan.scope:
                summary, plan.attempts, plan.usage, plan.model = await self._summarise(
                    context, head
                )
                plan.method = "summary"
                if summary is None:
                    summary = fallback_summary(facts(context, head, plan.files))
                    plan.method = "fallback"
                plan.summary = summary
        finally:
            plan.done.set()

    async def _finish(self, context: AgentContext, plan: _Plan) -> ContextCompacted:
        """The checkpoint of `plan`, with the anchors as they are now and whatever the
        agent added since the plan was made, journaled."""
        limits, ratio = plan.limits, plan.ratio
        if plan.summarised:  # a summary takes a while: the anchors as they are now
            plan.files = sorted(self._files(context.id))
            plan.anchor, plan.anchors = await self._anchor(context, plan.files, limits)
        anchor = plan.anchor
        added = context.messages[plan.length :]
        dropped = 0
        if not plan.summarised:
            candidate = [*plan.pruned.messages, *added, anchor]
        else:
            said = UserMessage(content=f"{SUMMARY_HEADER}\n\n{plan.summary}")
            tail = [*plan.pruned.messages[plan.recent :], *added]
            candidate = [*plan.system, said, anchor, *tail]
            while _chars(candidate) > limits.usable and tail:
                cut = next((p for p in cut_points(tail) if p > 0), len(tail))
                dropped += cut
                tail = tail[cut:]
                candidate = [*plan.system, said, anchor, *tail]
                plan.method = "truncated"
        size = _chars(candidate)
        if size > limits.usable:
            raise _too_small(context, round(size / ratio), plan.usable)
        settings = self._session.state.settings
        learned = plan.learned
        record = ContextCompacted(
            agent=context.id,
            messages=tuple(candidate),
            reason=plan.reason,
            method=plan.method,
            before=context.count().tokens,
            after=round(size / ratio),
            pruned=len(plan.pruned.refs),
            dropped=dropped,
            summary_chars=len(plan.summary),
            attempts=plan.attempts,
            usage=plan.usage,
            model=plan.model,
            window_model=learned[0] if learned is not None else "",
            window=learned[1].context if learned is not None else 0,
            files=tuple(plan.files),
            read=tuple(plan.anchors.read),
            goal=context.goal,
            min_freed=settings.min_freed if settings is not None else 0.2,
        )
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

    async def _anchor(
        self, context: AgentContext, files: Sequence[str], limits: _Limits
    ) -> tuple[UserMessage, Anchors]:
        """The anchors of `context` as the fold has them now, and their message."""
        found = await gather(self._session.state, context, files, self._workspace.root)
        return UserMessage(content=anchor_text.render(found, limits.anchors)), found

    def _limits(self, usable: int, ratio: float) -> _Limits:
        settings = self._session.state.settings
        anchor_share = settings.anchor_share if settings is not None else 0.25
        recent = settings.keep_recent if settings is not None else 8_000
        outputs = settings.keep_outputs if settings is not None else 20_000
        return _Limits(
            usable=int(usable * ratio),
            pruned_enough=int(usable * PRUNED_ENOUGH * ratio),
            anchors=int(usable * anchor_share * ratio),
            recent=int(min(recent, usable * 0.25) * ratio),
            outputs=int(min(outputs, usable * 0.25) * ratio),
        )

    async def _summarise(
        self, context: AgentContext, head: Sequence[Message]
    ) -> tuple[str | None, int, Usage | None, str]:
        """The compactor model's summary of `head` (None after `ATTEMPTS` failures), the
        calls made, what they spent and the model's name."""
        model = self._models(COMPACTOR)
        calls, failures, usage = 0, 0, None
        request = summary_request(head)
        while failures < ATTEMPTS:
            try:
                reply = await self._ask(model, context, request, step=context.summary_calls + calls)
            except ContextTooLong:
                # The summariser's own request is too long: its oldest outputs first.
                calls += 1
                shorter = _shrink(head)
                if shorter is None:
                    return None, calls, usage, model.name
                head = shorter
                request = summary_request(head)
                continue
            except ModelError:
                calls += 1
                failures += 1
                continue
            calls += 1
            if reply.usage is not None:
                usage = reply.usage if usage is None else usage + reply.usage
            missing = missing_sections(reply.text)
            if not missing:
                return reply.text.strip(), calls, usage, model.name
            failures += 1
            request = repair_request(summary_request(head), reply.text, missing)
        return None, calls, usage, model.name

    async def _ask(
        self, model: Model, context: AgentContext, messages: list[Message], step: int
    ) -> AssistantMessage:
        request = ModelRequest(
            messages=MessageView.of(messages), tools=(), agent=context.id, role=COMPACTOR, step=step
        )
        async with model.stream(request) as stream:
            return await collect(stream)


def _too_small(context: AgentContext, tokens: int, usable: int) -> CompactionFailed:
    return CompactionFailed(
        f"the context of {context.id} does not fit its model's window even compacted: "
        f"{tokens} tokens (system prompt, summary and anchors) for {usable} usable",
        provider="compaction",
    )


class _Plan:
    """A compaction decided at a round boundary: the context pruned, and, when a summary
    is needed, the part it replaces (after the system prompt, before `recent`) and, once
    `done`, the summary."""

    def __init__(
        self,
        context: AgentContext,
        reason: Reason,
        learned: tuple[str, Window] | None,
        limits: _Limits,
        ratio: float,
        usable: int,
        pruned: Pruned,
    ) -> None:
        self.reason = reason
        self.learned = learned
        self.limits = limits
        self.ratio = ratio
        self.usable = usable
        self.pruned = pruned
        self.start = context.start  # the context it was made of: this checkpoint's
        self.messages = context.messages  # list, as long as `length` then
        self.length = len(context.messages)
        self.summarised = False
        self.files: list[str] = []  # the files the agent changed, and its anchors
        self.anchors = Anchors(goal="")
        self.anchor = UserMessage(content="")
        self.system: list[Message] = []
        self.recent = 0
        self.method: Method = "pruned"
        self.summary = ""
        self.attempts = 0
        self.usage: Usage | None = None
        self.model = ""
        self.done = trio.Event()
        self.scope = trio.CancelScope()

    def still_fits(self, context: AgentContext) -> bool:
        """Whether the context is still the one planned on, with messages appended only
        (no checkpoint made meanwhile), and the summary came."""
        return (
            context.start == self.start
            and context.messages is self.messages
            and len(context.messages) >= self.length
            and not self.scope.cancelled_caught
            and bool(self.summary)
        )


class _Limits:
    """A compaction's budgets, in characters."""

    def __init__(
        self, *, usable: int, pruned_enough: int, anchors: int, recent: int, outputs: int
    ) -> None:
        self.usable = usable
        self.pruned_enough = pruned_enough
        self.anchors = anchors
        self.recent = recent
        self.outputs = outputs


def _chars(messages: Sequence[Message]) -> int:
    return sum(m.chars() for m in messages)


def _is_anchor(message: Message) -> bool:
    return isinstance(message, UserMessage) and message.content.startswith(anchor_text.HEADER)


def _shrink(head: Sequence[Message]) -> list[Message] | None:
    """`head` made smaller for a summariser that found it too long: every tool output
    pruned, else its older half dropped; None when nothing is left to drop."""
    pruned = prune(head, keep_chars=0)
    if pruned.refs:
        return pruned.messages
    points = [p for p in cut_points(head) if p > 0]
    if not points:
        return None
    return list(head[points[len(points) // 2] :])
