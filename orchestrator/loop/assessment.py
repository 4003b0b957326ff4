"""After a turn: go on, wait, verify, finish, or stop? One pure function decides.

`assess(situation)` takes what is known of one agent (its todos, its live tasks, the
budgets spent, its verification, its recent replies and calls) and returns one action with
its reasons. It has no side effects and reads no clock: the runtime (`main_agent.py` for
the main agent, `subagent.py` for a task) builds the `Situation`, journals the verdict as
an `assessed` record and acts on it.

What the rules need to know of the past is folded from the journal into an
`AgentProgress` per agent (state.py dispatches the records): continuations used, the reply
and call repeated, rounds without progress, the last change and the last passing
verification, what the agent reported blocking it. So a resumed session assesses exactly
as the uninterrupted one would.
"""

from collections.abc import Sequence
from typing import Literal

import msgspec
import orjson

from orchestrator.eventbase import EventBase
from orchestrator.loop.todos import TodoList, render
from orchestrator.messages import AssistantMessage

Action = Literal[
    "continue_from_context",
    "await_tasks",
    "verify",
    "completed",
    "blocked",
    "budget_exhausted",
    "await_user",
]

REPEATS = 3
"""The same reply, or the same tool call, this many times in a row is a loop."""

WAITING_TOOLS: frozenset[str] = frozenset({"wait_tasks"})
"""Calls that are expected to repeat while an agent waits: not a loop."""

DEFAULT_NOTE = (
    "[auto-continue] Your turn ended, but the work is not finished. Go on with the next "
    "open item now: call tools, do not describe what you will do. If you cannot go on, "
    "say why with report_blocked."
)


class Assessed(EventBase, frozen=True, tag="assessed"):
    """Record: the verdict on `agent`'s turn end. `note`, when set, is the continuation
    note that enters the agent's context (a user message) with this record."""

    action: Action
    reasons: tuple[str, ...] = ()
    note: str = ""
    count: int = 0  # a continuation's number, of `limit`
    limit: int = 0


class Verified(EventBase, frozen=True, tag="verified"):
    """Record: the verification commands ran. A failure's `note` (the failing output,
    trimmed) enters the agent's context as a continuation, and uses one."""

    passed: bool
    commands: tuple[str, ...] = ()
    exit_code: int = 0
    output: str = ""
    note: str = ""
    # False for a check run inside a call (a subagent's `complete`): its failure is that
    # call's result, not a continuation.
    counts: bool = True


class BlockedReported(EventBase, frozen=True, tag="blocked_reported"):
    """Record: the agent said it cannot go on (the main agent's `report_blocked`)."""

    category: str
    reason: str
    ref: str = ""


AssessmentRecords = Assessed | Verified | BlockedReported
"""The assessment's records (see `Record` in state/events.py)."""


class RefusedCall(msgspec.Struct, frozen=True):
    """A call refused for want of approval (its result `unapproved`: nobody could be
    asked): the agent, the tool, and its arguments as the model gave them (cut)."""

    agent: str
    tool: str
    arguments: str = ""


class AgentProgress(msgspec.Struct):
    """What the rules remember of one agent, folded from its records (and snapshotted: a
    msgspec struct)."""

    continues: int = 0
    blocked: str = ""
    last_reply: str = ""
    reply_repeats: int = 0
    last_calls: str = ""
    call_repeats: int = 0
    idle_rounds: int = 0  # model rounds since the last sign of progress
    changed_seq: int = 0  # the last reply that called tools
    verified_seq: int = 0  # the last passing verification
    verify_failures: int = 0

    def replied(self, seq: int, message: AssistantMessage) -> None:
        self.idle_rounds += 1
        if message.tool_calls:
            self.changed_seq = seq
            self.last_reply, self.reply_repeats = "", 0
            calls = [(c.name, c.arguments) for c in message.tool_calls]
            if all(name in WAITING_TOOLS for name, _ in calls):
                return
            signature = orjson.dumps(calls).decode()
            if signature == self.last_calls:
                self.call_repeats += 1
            else:
                self.last_calls, self.call_repeats = signature, 1
            return
        text = " ".join(message.text.split())
        self.last_calls, self.call_repeats = "", 0
        if text and text == self.last_reply:
            self.reply_repeats += 1
        else:
            self.last_reply, self.reply_repeats = text, 1 if text else 0

    def progressed(self) -> None:
        """A successful tool result, a todo change, a task settled."""
        self.idle_rounds = 0

    def heard(self, *, from_owner: bool) -> None:
        """Mail reached the agent: new information ends a loop; word from its owner (the
        user, for the main agent) also ends a block and renews its continuations."""
        self.idle_rounds = 0
        self.reply_repeats = self.call_repeats = 0
        self.last_reply = self.last_calls = ""
        if from_owner:
            self.blocked = ""
            self.continues = 0

    def assessed(self, seq: int, record: Assessed) -> None:
        if record.action == "continue_from_context":
            self.continues += 1

    def verified(self, seq: int, record: Verified) -> None:
        if record.passed:
            self.verified_seq = seq
        else:
            self.verify_failures += 1
            if record.counts:
                self.continues += 1

    def reported_blocked(self, record: BlockedReported) -> None:
        self.blocked = f"{record.category}: {record.reason}"


# --- the inputs and the rules ----------------------------------------------------------------


class Budgets(msgspec.Struct, frozen=True):
    """Limits of a session (the whole tree of agents) or of a task (its subtree); None
    is no limit. `wall` is seconds of this run."""

    rounds: int | None = None
    tokens: int | None = None
    cost: float | None = None
    wall: float | None = None


class Spent(msgspec.Struct, frozen=True):
    rounds: int = 0
    tokens: int = 0
    cost: float | None = None  # None: some model has no price, so cost is unknown
    wall: float = 0.0


def over_budget(budgets: Budgets, spent: Spent, *, scope: str = "session") -> list[str]:
    """Why a budget is spent (empty when none is)."""
    reasons = []
    if budgets.rounds is not None and spent.rounds >= budgets.rounds:
        reasons.append(f"{scope} round budget spent: {spent.rounds} of {budgets.rounds}")
    if budgets.tokens is not None and spent.tokens >= budgets.tokens:
        reasons.append(f"{scope} token budget spent: {spent.tokens:,} of {budgets.tokens:,}")
    if budgets.cost is not None and spent.cost is not None and spent.cost >= budgets.cost:
        reasons.append(f"{scope} cost budget spent: ${spent.cost:.4f} of ${budgets.cost:.4f}")
    if budgets.wall is not None and spent.wall >= budgets.wall:
        reasons.append(
            f"{scope} wall-time budget spent: {spent.wall:.0f} s of {budgets.wall:.0f} s"
        )
    return reasons


class Situation(msgspec.Struct, frozen=True):
    """Everything `assess` reads about one agent at the end of its turn."""

    todos: TodoList
    progress: AgentProgress
    max_continues: int = 10
    stall_rounds: int = 6
    live_tasks: tuple[str, ...] = ()  # its tasks still working (or waited for)
    spent: tuple[str, ...] = ()  # `over_budget`'s reasons
    verify: tuple[str, ...] = ()  # the verification commands configured
    waiting_on_it: tuple[str, ...] = ()  # its tasks waiting for its answer
    must_report: bool = False  # a subagent, which ends its task only with `complete`
    interactive: bool = False  # a person is there to answer between turns
    refused: tuple[RefusedCall, ...] = ()  # calls refused for want of approval
    # Todos linked to plan tasks whose task works or waits for its dependencies: the
    # runtime's to finish, not the agent's (docs/plans.md).
    in_hand: frozenset[str] = frozenset()
    # Plan tasks that ended badly and may not be re-planned again (the `[plan]` bounds),
    # each said with what a person can do: when nothing else goes on, the session stops.
    replans_spent: tuple[str, ...] = ()


class Assessment(msgspec.Struct, frozen=True):
    action: Action
    reasons: tuple[str, ...]


def assess(s: Situation) -> Assessment:
    """The one action for an agent whose turn ended, and why. First match wins."""
    p, todos = s.progress, s.todos
    if s.spent:
        return Assessment("budget_exhausted", s.spent)
    if p.blocked:
        return Assessment("blocked", (f"reported blocked: {p.blocked}",))
    stalled = _stalled(s)
    if stalled:
        if s.waiting_on_it:
            names = ", ".join(s.waiting_on_it)
            stalled += (f"tasks {names} wait for answers never given",)
        return Assessment("blocked", stalled)
    workable = [item for item in todos.workable() if item.id not in s.in_hand]
    if workable:
        left = len(todos.open_items())
        return _continue(s, f"{left} todo{'s remain' if left != 1 else ' remains'}")
    if s.live_tasks:
        return Assessment("await_tasks", (f"waiting for tasks {', '.join(s.live_tasks)}",))
    stuck = _stuck(s)
    if stuck:
        return Assessment("blocked", stuck)
    if s.verify and p.verified_seq <= p.changed_seq:
        return Assessment("verify", (f"not verified since the last change: {_cmds(s.verify)}",))
    if s.must_report:
        return _continue(s, "the task is not reported: call complete with your summary")
    if s.refused and not s.verify:
        # Work left undone for want of approval: done only if verification says so.
        return Assessment("blocked", (refused_reason(s.refused),))
    if s.interactive:
        return Assessment("await_user", _done_reasons(s))
    return Assessment("completed", _done_reasons(s))


def refused_reason(refused: Sequence[RefusedCall]) -> str:
    """One line: how many calls were refused for want of approval, and which tools."""
    n = len(refused)
    tools = ", ".join(sorted({call.tool for call in refused}))
    return (
        f"{n} call{'s' if n != 1 else ''} refused for want of approval (nobody could be "
        f"asked): {tools}"
    )


def _stuck(s: Situation) -> tuple[str, ...]:
    """Why nothing can go on, with nothing live and nothing workable: plan tasks that
    ended badly and may be re-planned no more, open todos that wait on failed work."""
    todos = s.todos
    stuck = [(item, todos.stuck_on_failed(item)) for item in todos.open_items()]
    return s.replans_spent + tuple(
        f"todo {item.id} waits on failed or cancelled work: {', '.join(ids) or '?'}"
        for item, ids in stuck
    )


def _stalled(s: Situation) -> tuple[str, ...]:
    p = s.progress
    if p.reply_repeats >= REPEATS:
        return (f"stalled: the same reply {p.reply_repeats} times in a row",)
    if p.call_repeats >= REPEATS:
        return (f"stalled: the same tool call {p.call_repeats} times in a row",)
    if p.idle_rounds >= s.stall_rounds:
        return (
            f"stalled: {p.idle_rounds} rounds without progress (no successful tool result, "
            "no todo change, no task settled)",
        )
    return ()


def _continue(s: Situation, reason: str) -> Assessment:
    if s.progress.continues >= s.max_continues:
        return Assessment(
            "budget_exhausted",
            (f"all {s.max_continues} automatic continuations used", reason),
        )
    return Assessment("continue_from_context", (reason,))


def _done_reasons(s: Situation) -> tuple[str, ...]:
    total = s.todos.progress()[1]
    reasons = [f"all {total} todos done"] if total else []
    if s.verify:
        reasons.append(f"verified: {_cmds(s.verify)} passed")
    return tuple(reasons)


def _cmds(commands: Sequence[str]) -> str:
    return "; ".join(commands)


def continuation_note(
    todos: TodoList,
    assessment: Assessment,
    *,
    count: int,
    limit: int,
    live_tasks: Sequence[str] = (),
    text: str = "",
) -> str:
    """The note that restates the goal, the progress, every item and the reasons."""
    lines = [text or DEFAULT_NOTE, f"(auto-continue {count} of {limit})"]
    if todos.items or todos.goal:
        lines.append(render(todos))
    if live_tasks:
        lines.append("Live tasks: " + ", ".join(live_tasks))
    lines.append("Why: " + "; ".join(assessment.reasons))
    return "\n".join(lines)
