"""The seams of the team: the session it runs over, where subagents run (`Runner`), and
the small port a runner's task loop works through (`TaskPort`) instead of the whole team.
A durable-execution engine implements `Runner` and drives tasks through a `TaskPort`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

import msgspec

from orchestrator.agent import TurnDeps
from orchestrator.loop.assessment import Assessment
from orchestrator.messages import ToolCall
from orchestrator.state.events import Event, EventSink, Notice, NullSink, TurnEndReason
from orchestrator.state.fold import SessionState
from orchestrator.state.mailbox import Mail, MailKind, MessagePosted, Priority
from orchestrator.state.tasks import RanOn, TaskState, TaskUsed
from orchestrator.team.definitions import AgentDefinition
from orchestrator.tools.permissions import Answer


class SessionLike(Protocol):
    """A `LiveSession` or a `MemorySession`: folds what it is given into `state`."""

    state: SessionState

    async def emit(self, event: Any, *, durable: bool = False) -> None: ...


class MailPort(Protocol):
    """A task's mail (the team's `Postbox`): post, deliver at a round boundary, sleep
    until mail comes, and take a message posted in another process."""

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

    async def deliver(
        self, agent: str, *, at_least: Priority = "notify", only: Collection[str] | None = None
    ) -> list[Mail]: ...

    async def receive(self, record: MessagePosted) -> Mail | None:
        """A message posted in another process under its own id, posted here once (a
        runner on other processes passes mail on with it)."""
        ...

    async def wait_for_mail(self, agent: str, *, at_least: Priority = "urgent") -> None: ...


class TaskStates(Protocol):
    """A task's states (the team's `Scheduler`): each change journaled, a revival, and the
    end of a task's loop."""

    async def set_state(
        self,
        task_id: str,
        state: TaskState,
        *,
        by: str,
        reason: str = "",
        instance: str = "",
        ran_on: RanOn | None = None,
    ) -> None:
        """Journal the task's new state (`task_changed`). A change that names a new
        `instance` starts a run, and says where it runs (`ran_on`, the runner's `where`):
        so a port on another process reports its own host, process and worker."""
        ...

    async def revive(self, task_id: str, *, by: str) -> None: ...

    def take_resumed(self, task_id: str) -> bool: ...

    async def task_ended(self, task_id: str) -> None: ...


class TurnPort(Protocol):
    """What a task's turns run with (the team's `Turns`), and the turn records written
    outside a turn."""

    def definition(self, task_id: str) -> AgentDefinition: ...

    def turn_deps(self, agent: str) -> TurnDeps: ...

    def redact(self, text: str) -> str: ...

    async def end_open_turn(self, agent: str, reason: TurnEndReason) -> None: ...

    async def nudge(self, agent: str, text: str) -> None: ...

    async def approve(self, agent: str, call: ToolCall) -> Answer:
        """Ask this session's approver about a call of `agent`'s that the permission
        rules leave to ask about, made elsewhere (a task on a worker)."""
        ...


class OversightPort(Protocol):
    """Whether a task's turn is over, and the assessment of its end (the team's
    `Oversight`)."""

    def turn_over(self, agent: str) -> bool: ...

    async def assess(self, agent: str, *, max_continues: int, must_report: bool) -> Assessment: ...


class EventPort(Protocol):
    """What a runner shows and counts that is not a task's own record."""

    async def tell(self, notice: Notice) -> None:
        """Show people a notice of the runner's own (the engine waiting for its database):
        to the session's screen and `--json`, not journaled."""
        ...

    async def record(self, event: Event) -> None:
        """Journal an event of the session's own about a task the runner runs elsewhere
        (a grant answered for a task on a worker, a call of its refused here)."""
        ...

    async def show(self, event: Event) -> None:
        """Show people an event this session does not journal, because it is journaled
        elsewhere: a task on a worker's reply or call, told again from that task's own
        journal (engine/remote.py). To the session's screen and `--json` only."""
        ...

    async def count(self, used: TaskUsed) -> None:
        """Journal the model calls of a task that ran elsewhere (on a worker), so that
        this session's budgets and cost include them."""
        ...


class TaskPort(Protocol):
    """What a task's loop (`subagent.run_task`) needs of the team: the folded state to
    read, and the team's parts that change it, each behind a small protocol it satisfies
    itself (nothing is forwarded)."""

    @property
    def state(self) -> SessionState: ...

    @property
    def session_id(self) -> str:
        """The session's id ("" for one that has none, in memory): an engine names the
        task's durable work by it."""
        ...

    @property
    def mail(self) -> MailPort: ...

    @property
    def tasks(self) -> TaskStates: ...

    @property
    def turns(self) -> TurnPort: ...

    @property
    def oversight(self) -> OversightPort: ...

    @property
    def events(self) -> EventPort: ...


class TeamPort(msgspec.Struct, frozen=True):
    """A team's `TaskPort`: its parts, as they are."""

    session: SessionLike
    session_id: str
    mail: MailPort
    tasks: TaskStates
    turns: TurnPort
    oversight: OversightPort
    events: EventPort

    @property
    def state(self) -> SessionState:
        return self.session.state


class Outlet:
    """The team's `EventPort`: a notice and a task's use to its sink (which journals
    what is a record), what is journaled elsewhere to its screen only."""

    def __init__(self, sink: EventSink, screen: EventSink | None = None) -> None:
        self._sink = sink
        self._screen = screen if screen is not None else NullSink()

    async def tell(self, notice: Notice) -> None:
        await self._sink.emit(notice)

    async def record(self, event: Event) -> None:
        await self._sink.emit(event)

    async def show(self, event: Event) -> None:
        await self._screen.emit(event)

    async def count(self, used: TaskUsed) -> None:
        await self._sink.emit(used)


class Runner(Protocol):
    """Where subagents run: in-process on trio (subagent.InProcessRunner), or on a
    durable-execution engine (engine/dbos.py), behind the same two calls. A runner says
    where each run of a task runs by the `where` it gives `work_task`, journaled with the
    change that starts the run (`TaskPort.set_state(..., ran_on=where)`): this process
    (`RanOn.here()`), its engine's worker id, or, for a runner whose loop runs in another
    process, that process's own `RanOn`."""

    def start(self, task_id: str, port: TaskPort) -> None: ...

    def cancel(self, task_id: str) -> None: ...
