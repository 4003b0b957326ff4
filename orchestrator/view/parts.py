"""The parts of the live view's model: one agent as the view shows it (what it is, the
state a person reads, what it is doing, what it has spent), a line of the mailbox flow,
an assessment's verdict. `ViewModel` (model.py) keeps them and changes them as events
arrive; everything a frame shows is read from here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, get_args

from orchestrator.loop.assessment import Action
from orchestrator.loop.todos import TodoList
from orchestrator.messages import ToolCall, Usage
from orchestrator.state.manifest import SessionStatus
from orchestrator.state.tasks import TaskState
from orchestrator.text import abbreviate

if TYPE_CHECKING:
    from orchestrator.prices.cost import Price

Status = Literal[
    "running",
    "thinking",
    "needs input",
    "blocked",
    "waiting",
    "done",
    "failed",
    "cancelled",
]
"""An agent's state as a person reads it:

- `running`: working (a tool runs, or between its model calls);
- `thinking`: a model call of its is in flight;
- `needs input`: a question of its, or an approval for one of its calls, waits for an
  answer;
- `blocked`: it said it cannot go on (`report_blocked`), and waits for its owner;
- `waiting`: for its own tasks (`wait_tasks`, or its turn ended awaiting them), for the
  tasks it depends on, or for a place among the live tasks;
- `done`, `failed`, `cancelled`: settled (a revived task runs again)."""

STATUSES: tuple[Status, ...] = get_args(Status)  # in the order of the counts
SETTLED: frozenset[Status] = frozenset({"done", "failed", "cancelled"})

_OF_TASK: dict[TaskState, Status] = {
    "waiting_deps": "waiting",
    "pending": "waiting",
    "running": "running",
    "waiting_decision": "needs input",
    "waiting_children": "waiting",
    "completed": "done",
    "failed": "failed",
    "cancelled": "cancelled",
}

MAIN_PHASE: dict[Action, Status] = {
    "continue_from_context": "running",
    "verify": "running",
    "await_tasks": "waiting",
    "await_user": "needs input",
    "completed": "done",
    "blocked": "blocked",
    "budget_exhausted": "failed",
}
"""The main agent's state after each verdict on its turn end."""

SESSION_END: dict[SessionStatus, Status] = {
    "completed": "done",
    "failed": "failed",
    "interrupted": "cancelled",
    "blocked": "blocked",
    "budget_exhausted": "failed",
}
"""The main agent's state when the session ends so."""


@dataclass
class Totals:
    """Tokens and cost of model calls (an agent's own, or its subtree's)."""

    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    unpriced: int = 0  # calls of a model without a price

    @property
    def tokens(self) -> int:
        return self.usage.total_tokens

    @property
    def priced(self) -> float | None:
        """The cost, None when no call had a price (there may be no calls at all)."""
        return None if self.calls and self.unpriced == self.calls else self.cost

    def add(self, usage: Usage, cost: float | None) -> None:
        self.calls += 1
        self.usage += usage
        self.cost += cost or 0.0
        self.unpriced += cost is None

    def __add__(self, other: Totals) -> Totals:
        return Totals(
            self.calls + other.calls,
            self.usage + other.usage,
            self.cost + other.cost,
            self.unpriced + other.unpriced,
        )


@dataclass
class AgentView:
    """One agent: the main agent, a planner, or the subagent of task `tN` (whose id it
    has). `owner` is the agent that delegated its task ("" for an agent without one)."""

    id: str
    kind: str = ""  # a task's agent type, else the agent's role (main, builder, planner)
    description: str = ""
    owner: str = ""
    children: list[str] = field(default_factory=list)
    task_state: TaskState | None = None  # None: not a delegated task
    phase: Status = "running"  # an agent without a task: what its last records said
    started: float = 0.0
    ended: float | None = None
    model: str = ""  # the model of its latest reply, else the one its role is given
    tool: bool = False  # a call in the background (a task of kind `tool`): no model
    context: int = 0  # tokens in its context now
    usable: int = 0  # the usable input of its model's window (0: not known)
    own: Totals = field(default_factory=Totals)
    todos: TodoList = field(default_factory=TodoList)
    progress: str = ""  # the latest progress it reported (a task's, or a tool's)
    progress_ref: str = ""  # the call whose progress that is ("" for a task's own)
    last_call: ToolCall | None = None  # its latest tool call
    question: str = ""  # what it asks, or why it is blocked
    outcome: str = ""  # how it ended: its completion's summary, why it failed
    blocked: bool = False  # the question is a block (`report_blocked`), not a decision
    asking: str = ""  # an approval it waits for ("" for none)
    in_turn: bool = False
    thinking: bool = False  # a model call in flight
    held: str = ""  # what that call waits for before it is sent (a rate limit; "": nothing)
    calls_open: int = 0  # calls of its latest reply without a result yet
    waiting_call: bool = False  # one of them is `wait_tasks`

    @property
    def status(self) -> Status:
        if self.asking:
            return "needs input"
        if self.task_state is not None:
            shown = _OF_TASK[self.task_state]
            if shown == "needs input" and self.blocked:
                return "blocked"
            if shown != "running":
                return shown
        elif self.phase != "running":
            return self.phase
        if self.thinking:
            return "thinking"
        return "waiting" if self.waiting_call else "running"

    @property
    def activity(self) -> str:
        """What it does now: the approval or question it waits on, how it ended (when it
        has), else its current todo item's active form, else its latest progress, else
        its last call."""
        if self.asking:
            return f"approve? {self.asking}"
        if self.held and self.thinking:
            return self.held
        status = self.status
        if status in ("needs input", "blocked") and self.question:
            return self.question
        if status in SETTLED and self.outcome:
            return self.outcome
        current = self.todos.current()
        if current is not None and status not in SETTLED:
            return current.active_form or current.content
        if self.progress or self.last_call is None:
            return self.progress
        return call_line(self.last_call)

    @property
    def context_share(self) -> float | None:
        """The share of its model's usable window its context fills (None: unknown)."""
        return self.context / self.usable if self.usable and self.context else None

    def elapsed(self, now: float) -> float:
        return (self.ended if self.ended is not None else now) - self.started


@dataclass(frozen=True)
class MailLine:
    """A message as the mailbox flow shows it."""

    id: str
    kind: str
    sender: str
    recipient: str
    summary: str


@dataclass(frozen=True)
class Verdict:
    """An assessment's verdict on an agent's turn end, or a verification's outcome."""

    agent: str
    action: str  # an assessment's action, `verified` or `verification failed`
    reasons: str


def call_line(call: ToolCall) -> str:
    """A tool call as an activity: its name and its arguments, cut."""
    return f"{call.name} {abbreviate(call.arguments, 60)}"


def pricing(prices: Mapping[str, Price]) -> Callable[[str, Usage], float | None]:
    """A call's cost, or None without a price (no prices in the config: the known
    models' table alone, and pydantic is not imported)."""
    if not prices:
        from orchestrator.prices.known import known_cost

        return known_cost
    from orchestrator.prices.cost import call_cost

    return lambda model, usage: call_cost(prices, model, usage)
