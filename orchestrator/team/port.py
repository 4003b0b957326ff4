"""The seams of the team: the session it runs over, where subagents run (`Runner`), and
the small port a runner's task loop works through (`TaskPort`) instead of the whole team.
A durable-execution engine implements `Runner` and drives tasks through a `TaskPort`.
"""

from __future__ import annotations

from typing import Any, Protocol

from orchestrator.agent import TurnDeps
from orchestrator.loop.assessment import Assessment
from orchestrator.state.events import Notice, TurnEndReason
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import Mail, MailKind, Priority
from orchestrator.state.tasks import TaskState
from orchestrator.team.definitions import AgentDefinition


class SessionLike(Protocol):
    """A `LiveSession` or a `MemorySession`: folds what it is given into `state`."""

    state: SessionState

    async def emit(self, event: Any, *, durable: bool = False) -> None: ...


class TaskPort(Protocol):
    """What a task's loop (`subagent.run_task`) needs of the team: the folded state to
    read, and the calls that change it, each journaled."""

    @property
    def state(self) -> SessionState: ...

    @property
    def session_id(self) -> str:
        """The session's id ("" for one that has none, in memory): an engine names the
        task's durable work by it."""
        ...

    def definition(self, task_id: str) -> AgentDefinition: ...

    def turn_deps(self, agent: str) -> TurnDeps: ...

    def redact(self, text: str) -> str: ...

    async def post(
        self,
        sender: str,
        to: str,
        task_id: str,
        kind: MailKind,
        summary: str,
        *,
        data: dict[str, Any] | None = None,
        requires_ack: bool = False,
    ) -> Mail: ...

    async def set_state(
        self, task_id: str, state: TaskState, *, by: str, reason: str = "", instance: str = ""
    ) -> None: ...

    async def deliver(self, agent: str, *, at_least: Priority = "notify") -> list[Mail]: ...

    async def wait_for_mail(self, agent: str, *, at_least: Priority = "urgent") -> None: ...

    def turn_over(self, agent: str) -> bool: ...

    async def assess(self, agent: str, *, max_continues: int, must_report: bool) -> Assessment: ...

    async def end_open_turn(self, agent: str, reason: TurnEndReason) -> None: ...

    async def nudge(self, agent: str, text: str) -> None: ...

    async def revive(self, task_id: str, *, by: str) -> None: ...

    def take_resumed(self, task_id: str) -> bool: ...

    async def task_ended(self, task_id: str) -> None: ...

    async def tell(self, notice: Notice) -> None:
        """Show people a notice of the runner's own (the engine waiting for its database):
        to the session's screen and `--json`, not journaled."""
        ...


class Runner(Protocol):
    """Where subagents run. In-process on trio today (subagent.InProcessRunner); a
    durable-execution engine later, behind the same two calls."""

    def start(self, task_id: str, port: TaskPort) -> None: ...

    def cancel(self, task_id: str) -> None: ...
