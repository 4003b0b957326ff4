"""The person's hooks at work in a team (docs/hooks.md): before and after each tool call
(`ToolHooks`, which the turn loop asks), before a compaction (its text kept among the
anchors), when the main agent is about to end its turn (it may be sent back), and at the
session's other turning points (told, not asked).

Every decision that changes what happens is journaled (`hook_decided`, state/hooks.py)
before it acts, and read back from the fold when the same call or compaction comes again
after a restart: a hook is not asked twice, and its decision holds. A hook sees the
event with the session's secrets redacted; its failure or time-out is one line and the
session goes on (a `fail_closed` `pre_tool` hook's refuses the call).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import trio

from orchestrator.agent.deps import HookVerdict
from orchestrator.messages import AssistantMessage, ToolCall, ToolResult
from orchestrator.redaction import Redactor
from orchestrator.state.approvals import approval_id
from orchestrator.state.events import Event, EventSink, Notice
from orchestrator.state.hooks import Decided, HookAction, HookDecided
from orchestrator.state.mailbox import Mail
from orchestrator.team.hook_runs import SAID_MAX, Failed, Hook, Said, run_hook
from orchestrator.team.hook_told import Told, Watching, told
from orchestrator.team.port import SessionLike
from orchestrator.tools.scripts import scripts

TOLD = frozenset({"task_delegated", "task_settled", "post_compact", "waiting", "user_message"})
"""The events told from what the session journals (hook_told.py)."""
MARK = "[redacted "
"""How a redacted value reads (redaction.py): changed arguments holding one are refused,
since the call would run with the mark instead of the value."""


class TeamHooks:
    """The hooks of one team's session. Empty, it asks nothing and costs nothing."""

    def __init__(
        self,
        hooks: Sequence[Hook],
        session: SessionLike,
        sink: EventSink,
        *,
        session_id: str,
        workspace: Path,
        redact: Redactor,
        max_sent_back: int,
    ) -> None:
        self._hooks = tuple(hooks)
        self._session = session
        self._sink = sink
        self._id = session_id
        self._root = workspace
        self._redact = redact
        self._max_sent_back = max_sent_back  # `stop` continuations in a row
        self._stopped_at: dict[str, AssistantMessage] = {}  # the answer last asked about
        # What each command runs from the workspace, hashed as the session starts.
        self._pinned = {h.run: scripts(h.run, workspace) for h in hooks if isinstance(h.run, str)}
        # The events told, not asked, queued in order (`saw`, `tell_in_order`).
        self._send, self._receive = trio.open_memory_channel[Told](math.inf)
        self._pending = 0
        self._quiet = trio.Event()
        self._quiet.set()

    def __bool__(self) -> bool:
        return bool(self._hooks)

    def _matching(self, event: str, agent: str, *, tool: str = "") -> list[Hook]:
        if not self._hooks:
            return []
        role = self._role(agent)
        return [h for h in self._hooks if h.matches(event, tool=tool, role=role)]

    def _role(self, agent: str) -> str:
        context = self._session.state.agents.get(agent)
        return context.role if context is not None else agent

    def _event(self, event: str, agent: str, **more: Any) -> dict[str, Any]:
        said = {
            "event": event,
            "session": self._id,
            "agent": agent,
            "role": self._role(agent),
            "workspace": str(self._root),
            **more,
        }
        redacted: dict[str, Any] = _redacted(said, self._redact) if self._redact else said
        return redacted

    async def _run(self, hook: Hook, event: dict[str, Any]) -> Said | Failed:
        said = await self._unchanged(hook) or await run_hook(hook, event, self._root)
        if isinstance(said, Failed):
            what = "the call is refused" if hook.fail_closed else "going on without it"
            message = f"hook {hook.name!r} ({hook.event}) failed: {said.why}; {what}"
            await self._sink.emit(Notice(agent=event["agent"], message=message))
        return said

    async def _unchanged(self, hook: Hook) -> Failed | None:
        """Why a command whose script lies in the workspace is not run: the script changed
        since the session started (an agent's tools can write there); None to run it."""
        run = hook.run
        if not isinstance(run, str) or not (pinned := self._pinned.get(run)):
            return None
        now = await trio.to_thread.run_sync(scripts, run, self._root)
        if now == pinned:
            return None
        changed = ", ".join(sorted(pinned))
        return Failed(f"its script in the workspace ({changed}) changed since the session started")

    async def _decide(
        self, agent: str, event: str, action: HookAction, hook: Hook, **fields: Any
    ) -> None:
        record = HookDecided(agent=agent, event=event, action=action, hook=hook.name, **fields)
        # Durable when it acts outside the journal at once: a call refused or changed
        # (before its start), an agent sent back (its next turn).
        await self._sink.emit(record, durable=action in ("refuse", "change", "ask", "continue"))

    # --- before and after a tool call (agent/deps.py `ToolHooks`) ---------------------------

    async def before(self, agent: str, ref: str, call: ToolCall) -> HookVerdict:
        journaled = self._session.state.hooks.of(agent, "pre_tool", ref)
        if journaled is not None:
            return _verdict(journaled)
        hooks = self._matching("pre_tool", agent, tool=call.name)
        if not hooks:
            return HookVerdict()
        arguments = orjson.loads(call.arguments or "{}")  # (parsed already: an object)
        changed_by: Hook | None = None
        ask = False
        for hook in hooks:
            event = self._event("pre_tool", agent, tool=call.name, arguments=arguments, ref=ref)
            said = await self._run(hook, event)
            if isinstance(said, Failed):
                if hook.fail_closed:
                    why = f"{call.name} was not run: its hook failed ({said.why}); do not retry it"
                    return await self._refuse(agent, ref, hook, why)
                continue
            if said.decision == "refuse":
                why = f"{call.name} was refused by a hook: {said.reason[:SAID_MAX] or 'no reason'}"
                return await self._refuse(agent, ref, hook, f"{why}; do not retry it")
            ask = ask or said.decision == "ask"
            if said.arguments is not None and said.arguments != arguments:
                arguments, changed_by = said.arguments, hook
        if changed_by is None:
            if ask:
                await self._decide(agent, "pre_tool", "ask", hooks[0], ref=ref)
            return HookVerdict(ask=ask)
        text = orjson.dumps(arguments).decode()
        if MARK in text:
            why = (
                f"{call.name} was not run: a hook changed its arguments to ones that hold a "
                "redacted value"
            )
            return await self._refuse(agent, ref, changed_by, why)
        await self._decide(
            agent, "pre_tool", "change", changed_by, ref=ref, arguments=text, ask=ask
        )
        return HookVerdict(arguments=text, ask=ask)

    async def _refuse(self, agent: str, ref: str, hook: Hook, why: str) -> HookVerdict:
        await self._decide(agent, "pre_tool", "refuse", hook, ref=ref, text=why)
        return HookVerdict(refused=why)

    async def after(self, agent: str, ref: str, call: ToolCall, result: ToolResult) -> str:
        journaled = self._session.state.hooks.of(agent, "post_tool", ref)
        if journaled is not None:
            return journaled.text
        hooks = self._matching("post_tool", agent, tool=call.name)
        if not hooks:
            return ""
        event = self._event(
            "post_tool",
            agent,
            tool=call.name,
            arguments=orjson.loads(call.arguments or "{}"),
            ref=ref,
            status=result.status,
            content=result.content,
        )
        notes = []
        for hook in hooks:
            said = await self._run(hook, event)
            if isinstance(said, Said) and said.note:
                notes.append((hook, f"Note from a hook: {said.note[:SAID_MAX]}"))
        if not notes:
            return ""
        text = "\n".join(note for _, note in notes)
        await self._decide(agent, "post_tool", "note", notes[0][0], ref=ref, text=text)
        return text

    # --- before a compaction ----------------------------------------------------------------

    async def before_compaction(self, agent: str, number: int, reason: str) -> tuple[str, ...]:
        """The texts the `pre_compact` hooks keep among the anchors of `agent`'s
        compaction `number` (its count of compactions before it)."""
        ref = str(number)
        journaled = self._session.state.hooks.of(agent, "pre_compact", ref)
        if journaled is not None:
            return (journaled.text,)
        hooks = self._matching("pre_compact", agent)
        texts = []
        for hook in hooks:
            said = await self._run(hook, self._event("pre_compact", agent, reason=reason))
            if isinstance(said, Said) and said.text:
                texts.append((hook, said.text[:SAID_MAX]))
        if not texts:
            return ()
        text = "\n\n".join(t for _, t in texts)
        await self._decide(agent, "pre_compact", "anchor", texts[0][0], ref=ref, text=text)
        return (text,)

    # --- the main agent about to end its turn -----------------------------------------------

    async def stop(self, agent: str) -> bool:
        """Whether a `stop` hook sends `agent` back to work (its reason, journaled, is in
        the agent's context as a user message): at most `max_sent_back` times in a row,
        until its owner writes to it again."""
        hooks = self._matching("stop", agent)
        if not hooks:
            return False
        if self._session.state.hooks.sent_back.get(agent, 0) >= self._max_sent_back:
            return False
        context = self._session.state.agents[agent]
        last = context.messages[-1] if context.messages else None
        if not isinstance(last, AssistantMessage) or last.tool_calls:
            return False  # (its turn did not end with an answer: nothing to send back)
        if self._stopped_at.get(agent) is last:
            return False  # (asked already about this answer: it let it end)
        self._stopped_at[agent] = last
        event = self._event("stop", agent, text=last.text)
        for hook in hooks:
            said = await self._run(hook, event)
            if isinstance(said, Said) and said.decision in ("continue", "refuse"):
                reason = said.reason[:SAID_MAX] or "no reason given"
                note = f"A hook asks you not to end your turn yet: {reason}"
                await self._decide(agent, "stop", "continue", hook, text=note)
                return True
        return False

    # --- told, not asked ---------------------------------------------------------------------

    async def tell(self, event: str, agent: str, more: dict[str, Any]) -> None:
        """Run the hooks of `event` now (a notification: their answers change nothing)."""
        for hook in self._matching(event, agent):
            await self._run(hook, self._event(event, agent, **more))

    def watching(self, sink: EventSink) -> EventSink:
        """`sink`, watched for the events the hooks are told of (itself when none is)."""
        if not any(hook.event in TOLD for hook in self._hooks):
            return sink
        return Watching(sink, self)

    def saw(self, event: Event) -> None:
        """Queue the hooks `event` tells, to run in order (`tell_in_order`)."""
        said = told(event, self._session.state)
        if said is not None:
            self.queue(*said)

    def queue(self, event: str, agent: str, more: dict[str, Any]) -> None:
        """Queue the hooks of `event` (told, not asked), to run in order."""
        if not self._matching(event, agent):
            return
        if not self._pending:
            self._quiet = trio.Event()
        self._pending += 1
        self._send.send_nowait((event, agent, more))

    def asking(self, agent: str, call: ToolCall, ref: str) -> None:
        """`waiting`: `agent`'s call `ref` is put to a person now (at the terminal)."""
        more = {"what": "approval", "tool": call.name, "ref": ref}
        self.queue("waiting", agent, {**more, "id": approval_id(agent, ref) if ref else ""})

    async def tell_questions(self, questions: Iterable[Mail]) -> None:
        """`waiting`, now: the run ends blocked on `questions` that only a person can
        answer now (`RunResult.questions`)."""
        for mail in questions:
            more = {"what": "question", "task": mail.sender, "of": mail.recipient}
            more |= {"question": mail.summary, "id": mail.message_id}
            await self.tell("waiting", mail.sender, more)

    async def tell_in_order(self) -> None:
        """Run the hooks queued by `saw`, one at a time, until the team closes."""
        async for event, agent, more in self._receive:
            try:
                await self.tell(event, agent, more)
            finally:
                self._pending -= 1
                if not self._pending:
                    self._quiet.set()

    async def drained(self, seconds: float) -> None:
        """Wait (at most `seconds`) until the hooks queued so far have run."""
        with trio.move_on_after(seconds):
            await self._quiet.wait()


def _verdict(decided: Decided) -> HookVerdict:
    match decided.action:
        case "refuse":
            return HookVerdict(refused=decided.text)
        case "change":
            return HookVerdict(arguments=decided.arguments, ask=decided.ask)
        case "ask":
            return HookVerdict(ask=True)
    return HookVerdict()


def _redacted(value: Any, redact: Redactor) -> Any:
    """`value` with every string in it redacted (keys too)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {redact(str(k)): _redacted(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(v, redact) for v in value]
    return value
