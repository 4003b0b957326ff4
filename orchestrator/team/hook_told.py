"""The hooks that are told, not asked (docs/hooks.md): what each journaled event of the
session is told as (`told`), and `Watching`, the sink that hands those events to the
team's hooks after the session has them."""

from __future__ import annotations

from typing import Any, Protocol

from orchestrator.loop.compaction import ContextCompacted
from orchestrator.state.approvals import ApprovalParked
from orchestrator.state.events import Event, EventSink
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import MAIN, USER, MessagesDelivered
from orchestrator.state.tasks import SETTLED, TaskChanged, TaskCreated

Told = tuple[str, str, dict[str, Any]]
"""An event as a hook is told it: its hook event, whose it is, and what it says."""


def told(event: Event, state: SessionState) -> Told | None:
    """What `event` (once folded into `state`) tells the hooks, if anything."""
    match event:
        case TaskCreated(task=task, agent_type=agent_type, description=description):
            more = {"task": task, "agent_type": agent_type, "description": description}
            return "task_delegated", event.agent, more
        case TaskChanged(task=task, state=settled, reason=reason) if settled in SETTLED:
            return "task_settled", task, {"task": task, "state": settled, "reason": reason}
        case ContextCompacted():
            figures = {k: v for k, v in event.figures().items() if k != "agent"}
            return "post_compact", event.agent, figures
        case ApprovalParked(ref=ref):
            return "waiting", event.agent, {"what": "approval", "ref": ref, "id": event.id}
        case MessagesDelivered(ids=ids) if event.agent == MAIN:
            messages = state.mailbox.messages
            said = [m.summary for i in ids if (m := messages.get(i)) and m.sender == USER]
            return ("user_message", MAIN, {"text": "\n\n".join(said)}) if said else None
    return None


class Seer(Protocol):
    def saw(self, event: Event) -> None: ...


class Watching:
    """`sink`, then the hooks told of what it was given (queued: they run in order,
    apart from the work, which never waits for them)."""

    def __init__(self, sink: EventSink, seer: Seer) -> None:
        self._sink = sink
        self._seer = seer

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        await self._sink.emit(event, durable=durable)
        self._seer.saw(event)
