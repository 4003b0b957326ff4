"""The postbox: mail between agents and what it wakes. It journals each message (the
mailbox's records and fold are in `state/mailbox.py`), wakes its recipient as the
message's priority says, cancels the recipient's model or tool call in flight for an
`interrupt`, and delivers waiting mail into an agent's context at a round boundary.

What it keeps itself is runtime only: who sleeps waiting for mail, which calls an
interrupt would cancel, and the `Changes` event `wait_tasks` sleeps on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator
from types import TracebackType
from typing import Any

import msgspec
import trio

from orchestrator.state.events import EventSink
from orchestrator.state.fold import USER
from orchestrator.state.mailbox import (
    DEFAULT_PRIORITY,
    Caps,
    Mail,
    MailKind,
    MessagePosted,
    MessagesDelivered,
    Priority,
)
from orchestrator.state.mailtext import latest_progress_only, render
from orchestrator.state.tasks import now_ms
from orchestrator.team.ids import free_id
from orchestrator.team.port import SessionLike


class Changes:
    """Set on every change of a task or of the mail: what `wait_tasks` sleeps on."""

    def __init__(self) -> None:
        self.event = trio.Event()

    def notify(self) -> None:
        self.event.set()
        self.event = trio.Event()


class _Agent(msgspec.Struct):
    """The runtime of one agent: its wake-up, and its model and tool calls in flight."""

    wake: trio.Event = msgspec.field(default_factory=trio.Event)
    model_scope: trio.CancelScope | None = None
    tool_scopes: set[trio.CancelScope] = msgspec.field(default_factory=set)


class Postbox:
    """Posts, wake-ups, interrupts and deliveries for the agents of one session."""

    def __init__(
        self,
        session: SessionLike,
        sink: EventSink,
        caps: Caps,
        changes: Changes,
        *,
        prefix: str = "m",
    ) -> None:
        self._session = session
        self._sink = sink
        self._caps = caps
        self._changes = changes
        self._prefix = prefix
        self._agents: dict[str, _Agent] = {}
        # Ids of posts on their way to the journal (several may wait for room at once).
        self._reserved: set[str] = set()

    def _runtime(self, agent: str) -> _Agent:
        runtime = self._agents.get(agent)
        if runtime is None:
            runtime = self._agents[agent] = _Agent()
        return runtime

    async def post(
        self,
        sender: str,
        to: str,
        task_id: str,
        kind: MailKind,
        summary: str,
        *,
        data: dict[str, Any] | None = None,
        priority: Priority | None = None,
        requires_ack: bool = False,
        in_reply_to: str = "",
        ref: str = "",
    ) -> Mail:
        """Journal a message, then wake its recipient as its priority says. (A settled
        task its owner writes to is revived by the delegation that wrote.)"""
        with self._new_id() as message_id:
            mail = await self._post(
                MessagePosted(
                    agent=sender,
                    id=message_id,
                    to=to,
                    task=task_id,
                    mail=kind,
                    priority=priority or DEFAULT_PRIORITY[kind],
                    summary=summary,
                    data=data,
                    requires_ack=requires_ack,
                    in_reply_to=in_reply_to,
                    ref=ref,
                    at=now_ms(),
                )
            )
        return mail

    @contextlib.contextmanager
    def _new_id(self) -> Iterator[str]:
        """A message id no message has: the first free one of the fold, past those of
        posts on their way (derived, not counted: a post that fails takes no id)."""
        posted = self._session.state.mailbox.posted_ids
        start = posted.upto + 1 if self._prefix == "m" else 1
        with free_id(self._prefix, start, posted, self._reserved) as message_id:
            yield message_id

    async def receive(self, record: MessagePosted) -> Mail | None:
        """A message posted in another process (a task on a worker, or the session that
        owns it), under the id it was given there: posted here once, and its recipient
        woken; None when that id is known already (so a message passed on twice, after
        a crash, arrives once)."""
        if record.id in self._session.state.mailbox.posted_ids:
            return None
        return await self._post(record)

    async def _post(self, record: MessagePosted) -> Mail:
        sender, to = record.agent, record.to
        # Between agents the journal's order is enough (a delivery is journaled after its
        # post); what a person says is on disk before `say` returns.
        await self._sink.emit(record, durable=sender == USER)
        state = self._session.state
        # (A message without a posting call may already be delivered and gone.)
        mail = state.mailbox.get(record.id) or Mail.of(0, record)
        self._changes.notify()
        runtime = self._runtime(to)
        runtime.wake.set()  # a sleeper checks the priority it waits for (wait_for_mail)
        if mail.priority == "interrupt":
            # The model call in flight, and tool calls that can stop safely.
            if runtime.model_scope is not None:
                runtime.model_scope.cancel()
            for scope in runtime.tool_scopes:
                scope.cancel()
        return mail

    async def deliver(
        self, agent: str, *, at_least: Priority = "notify", only: Collection[str] | None = None
    ) -> list[Mail]:
        """Put `agent`'s waiting mail (of at least that priority; of the ids `only`, when
        given) into its context, as one record that is also the acknowledgement. Several
        progress reports from one task arrive as its latest only (the rest stay in the
        task's timeline)."""
        state = self._session.state
        waiting = state.mailbox.undelivered(agent, at_least=at_least)
        if only is not None:
            waiting = [mail for mail in waiting if mail.message_id in only]
        if not waiting:
            return []
        context = state.agents.get(agent)
        if context is None or context.open_calls:
            return []
        content = render(latest_progress_only(waiting), self._caps)
        await self._sink.emit(
            MessagesDelivered(
                agent=agent, ids=tuple(m.message_id for m in waiting), content=content
            )
        )
        return waiting

    async def wait_for_mail(self, agent: str, *, at_least: Priority = "urgent") -> None:
        """Sleep (not poll) until `agent` has undelivered mail of at least that priority."""
        while not self._session.state.mailbox.undelivered(agent, at_least=at_least):
            runtime = self._runtime(agent)
            runtime.wake = trio.Event()
            if self._session.state.mailbox.undelivered(agent, at_least=at_least):
                return
            await runtime.wake.wait()

    def model_call(self, agent: str) -> _CallScope:
        """The scope of `agent`'s model call: an interrupt for it cancels it."""
        return _CallScope(self._runtime(agent), model=True)

    def tool_call(self, agent: str) -> _CallScope:
        """The scope of one of `agent`'s interruptible tool calls."""
        return _CallScope(self._runtime(agent), model=False)


class _CallScope:
    """A cancel scope kept on an agent's runtime while a call of its runs in it, for an
    interrupt to cancel: its model call's, or one of its tool calls'. (A class, not a
    generator's context manager: one is entered every round.)"""

    __slots__ = ("_model", "_runtime", "_scope")

    def __init__(self, runtime: _Agent, *, model: bool) -> None:
        self._runtime = runtime
        self._model = model
        self._scope = trio.CancelScope()

    def __enter__(self) -> trio.CancelScope:
        scope = self._scope.__enter__()
        if self._model:
            self._runtime.model_scope = scope
        else:
            self._runtime.tool_scopes.add(scope)
        return scope

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        if self._model:
            self._runtime.model_scope = None
        else:
            self._runtime.tool_scopes.discard(self._scope)
        return self._scope.__exit__(kind, error, traceback)


async def watch_stalls(session: SessionLike, postbox: Postbox, after: float) -> None:
    """Report, once, each running task that made no progress (no model reply, no new
    message in its context) for `after` seconds: a `risk_alert` to its owner."""
    seen: dict[str, tuple[int, int, float]] = {}
    reported: set[str] = set()
    while True:
        await trio.sleep(after / 4)
        now = trio.current_time()
        for task in list(session.state.tasks.tasks.values()):
            context = session.state.agents.get(task.task_id)
            if task.state != "running" or context is None:
                seen.pop(task.task_id, None)
                continue
            mark = (context.steps, len(context.messages))
            before = seen.get(task.task_id)
            if before is None or before[:2] != mark:
                seen[task.task_id] = (*mark, now)
                reported.discard(task.task_id)
            elif now - before[2] >= after and task.task_id not in reported:
                reported.add(task.task_id)
                quiet = now - before[2]
                await postbox.post(
                    task.task_id,
                    task.owner,
                    task.task_id,
                    "risk_alert",
                    f"stalled: no progress for {quiet:.0f} s (a model or tool call may "
                    "hang); cancel_task it, or send_message to redirect it",
                    data={"stalled_seconds": round(quiet)},
                )
