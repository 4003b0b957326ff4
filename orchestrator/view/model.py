"""The live view's model: the agents and tasks of a session, as a tree, and the session's
plan, compactions, verdicts and mail, folded from events.

Pure: `apply(event)` changes it and does nothing else (no I/O, no awaiting), so the same
model serves the live view (a sink applies each event as it comes), `sessions watch`
(the journal's records applied one by one: a journal record is an event) and `/tasks`
in a chat (read it). Times come from the clock it is given, or with each event
(`at=`, as a replay gives the journal's), so tests and replays are stable.

What events do not say, the runtime may tell it: `approval_asked` and
`approval_answered` around a call the permission rules ask a person about, and
`configure(models)`, the model each role is given, so that an agent shows its model from
its start rather than from its first reply.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from orchestrator.loop.assessment import Assessed, BlockedReported, Verified
from orchestrator.loop.compaction import CompactionStarted, ContextCompacted
from orchestrator.loop.todos import TodosChanged
from orchestrator.messages import ToolCall, Usage
from orchestrator.session import shown
from orchestrator.session.runs import Runs, ran
from orchestrator.state.checkpoints import (
    SessionForked,
    WorkspaceCheckpointed,
    WorkspaceRestored,
    WorkspaceRestoring,
)
from orchestrator.state.events import (
    AgentStarted,
    AssistantReplied,
    CallResult,
    EngineBack,
    EngineWaiting,
    Event,
    ModelWaiting,
    Notice,
    PermissionGranted,
    Record,
    SessionStatusChanged,
    TextStreamed,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
    TurnEnded,
    TurnStarted,
    UsageUpdated,
)
from orchestrator.state.mailbox import MAIN, MessagePosted
from orchestrator.state.manifest import SessionStatus
from orchestrator.state.plans import PlanDecided, PlanSubmitted, ReplanRequested
from orchestrator.state.settings import SettingsChosen
from orchestrator.state.tasks import TaskChanged, TaskCreated
from orchestrator.text import abbreviate
from orchestrator.view.parts import (
    MAIN_PHASE,
    SESSION_END,
    STATUSES,
    AgentView,
    MailLine,
    Status,
    Totals,
    Verdict,
    pricing,
)

if TYPE_CHECKING:
    from orchestrator.prices.cost import Price

WAITING_TOOLS = frozenset({"wait_tasks"})
SESSION_EVENTS: frozenset[type] = frozenset(
    {SessionStatusChanged, PlanSubmitted, PlanDecided, ReplanRequested, MessagePosted}
    | {SettingsChosen, PermissionGranted, Notice, EngineWaiting, EngineBack}
    | {WorkspaceCheckpointed, WorkspaceRestoring, WorkspaceRestored, SessionForked}
)
"""The events of the session itself (`_session_event`): they make no agent appear. Told
apart by their type before any `match`, which costs a test per case."""
ROUND_EVENTS: frozenset[type] = frozenset(
    {AssistantReplied, ToolCallStarted, ToolCallFinished, CallResult, UsageUpdated}
)
"""The events of every model round (`_round`): most of a session's."""


class ViewModel:
    """The session as the live view shows it. `prices` (dollars per million tokens, by
    model) price the calls; `clock` gives the time of an event applied without `at`."""

    def __init__(
        self,
        *,
        prices: Mapping[str, Price] | None = None,
        clock: Callable[[], float] = time.time,
        mail_lines: int = 5,
        verdicts: int = 5,
    ) -> None:
        self.agents: dict[str, AgentView] = {}  # in the order they appeared
        self.status: SessionStatus | None = None
        self.detail = ""  # why the session ended as it did
        self.plan = ""  # "awaiting approval of v1", "building v2", ...
        self.compacting: dict[str, str] = {}  # agent -> what the compaction is about
        self.verdicts: deque[Verdict] = deque(maxlen=verdicts)
        self.mail: deque[MailLine] = deque(maxlen=mail_lines)
        self.started: float | None = None
        self.ended: float | None = None
        self.version = 0  # counts the changes: a frame drawn at one version is current
        self.runs = Runs()  # every duration shown is counted within them (session/runs.py)
        self._models: Callable[[str], str] = _unknown
        self._clock = clock
        self._cost = pricing(prices or {})

    # --- reading ----------------------------------------------------------------------

    def roots(self) -> list[AgentView]:
        """The agents no task owns (planners, the main agent), in order of appearance."""
        return [a for a in self.agents.values() if not a.owner]

    def walk(self) -> Iterator[tuple[int, AgentView]]:
        """Every agent with its depth, each followed by its tasks (depth first)."""
        stack = [(0, a) for a in reversed(self.roots())]
        while stack:
            depth, agent = stack.pop()
            yield depth, agent
            stack += [(depth + 1, self.agents[c]) for c in reversed(agent.children)]

    def subtree(self, agent: str) -> Totals:
        """The tokens and cost of `agent` and every task under it."""
        node = self.agents[agent]
        total = node.own
        for child in node.children:
            total = total + self.subtree(child)
        return total

    def totals(self) -> Totals:
        total = Totals()
        for agent in self.agents.values():
            total = total + agent.own
        return total

    def counts(self) -> dict[Status, int]:
        """How many agents are in each state (thinking counts as running)."""
        found = dict.fromkeys(STATUSES, 0)
        for agent in self.agents.values():
            status = agent.status
            found["running" if status == "thinking" else status] += 1
        return {status: n for status, n in found.items() if n}

    def now(self) -> float:
        return self._clock()

    def elapsed(self, now: float) -> float:
        """How long the session has run, its runs counted, not the time between them."""
        if self.started is None:
            return 0.0
        end = self.ended if self.ended is not None else now
        return ran(self.runs.spans(now), self.started, end)

    def status_line(self, now: float | None = None) -> str:
        """`3 running · 1 needs input · 12.4k tokens · $0.03 · 1m12s`."""
        now = self.now() if now is None else now
        parts = [f"{n} {status}" for status, n in self.counts().items()]
        total = self.totals()
        parts.append(f"{shown.tokens(total.tokens)} tokens")
        if total.priced is not None and total.calls:
            parts.append(shown.cost(total.priced, lower_bound=0 < total.unpriced < total.calls))
        parts.append(shown.duration(self.elapsed(now)))
        return " · ".join(parts)

    # --- what the runtime tells it ----------------------------------------------------

    def approval_asked(self, agent: str, what: str, *, at: float | None = None) -> None:
        """`agent` waits while a person is asked about a call (`what`: the tool, or the
        command); until `approval_answered`, it needs input."""
        self._agent(agent, self._at(at)).asking = what
        self.version += 1

    def approval_answered(self, agent: str, *, at: float | None = None) -> None:
        self._agent(agent, self._at(at)).asking = ""
        self.version += 1

    def configure(self, models: Callable[[str], str]) -> None:
        """`models(role)`: the name of the model a role (`main`, `planner`, an agent
        type) is given, "" when not known. Every agent without a model yet shows its
        role's, and so does every agent that starts from now on."""
        self._models = models
        for agent in self.agents.values():
            self._configured(agent)
        self.version += 1

    def _configured(self, agent: AgentView) -> None:
        if not agent.model and not agent.tool and agent.kind:
            agent.model = self._models(agent.kind)

    # --- the fold -----------------------------------------------------------------------

    def apply(self, event: Event | Record, *, at: float | None = None) -> None:
        """Change the model by one event (or one journal record), at time `at` (the
        clock's when not given)."""
        kind = type(event)
        if kind in ROUND_EVENTS and (agent := self.agents.get(event.agent)) is not None:
            self._round(agent, event)  # (no time: an agent already there, not settling)
            if at is not None:
                self.runs.saw(at)  # (a journal's record: a killed run ends at its last)
            self.version += 1
            return
        now = self._clock() if at is None else at
        if self.started is None:
            self.started = now
        status = event.status if isinstance(event, SessionStatusChanged) else ""
        self.runs.seen(now, status, preamble=kind is SettingsChosen)
        if kind in SESSION_EVENTS:
            self._session_event(event, now)
        else:
            agent = self.agents.get(event.agent) or self._agent(event.agent, now)
            if not self._conversation(agent, event):
                self._team(agent, event, now)
            self._settle(agent, now)
        self.version += 1

    def _session_event(self, event: Event | Record, now: float) -> None:
        """The session's own events (`SESSION_EVENTS`)."""
        match event:
            case SessionStatusChanged(status=status, detail=detail):
                self._session(status, detail, now)
            case PlanSubmitted(version=version, plan=plan):
                self.plan = f"awaiting approval of v{version}"
                planner = self.agents.get(event.agent)
                if planner is not None:
                    planner.outcome = f"plan v{version}: {len(plan.tasks)} task(s)"
            case PlanDecided(version=version, decision=decision):
                approved = decision == "approved"
                self.plan = f"building v{version}" if approved else f"v{version} rejected"
            case ReplanRequested(plan_task=plan_task):
                self.plan = f"re-planning {plan_task}"
            case MessagePosted():
                self._posted(event)  # mail flows; its sender may be the person (`user`)
            case _:
                pass  # settings chosen, a permission granted, a notice: nothing shown

    def _round(self, agent: AgentView, event: Event | Record) -> bool:
        """The events of every model round (`ROUND_EVENTS`); False for any other. They
        settle no agent, so they need no time: the fold's hot path."""
        match event:
            case AssistantReplied(message=message, model=model):
                self._replied(agent, message.tool_calls, message.usage, model)
            case ToolCallStarted(call=call):
                agent.last_call = call
                agent.waiting_call = agent.waiting_call or call.name in WAITING_TOOLS
            case ToolCallFinished(ref=ref) | CallResult(ref=ref):
                self._call_ended(agent, ref)
            case UsageUpdated(context=context, usable=usable):
                agent.context, agent.usable = context, usable or agent.usable
            case _:
                return False
        return True

    def _conversation(self, agent: AgentView, event: Event | Record) -> bool:
        """An agent's turns, model calls and tool calls; False for any other event."""
        if self._round(agent, event):
            return True
        match event:
            case TextStreamed():
                agent.thinking, agent.held = True, ""
            case ModelWaiting(seconds=seconds, why=why):
                agent.thinking = True
                how_long = "for a place" if seconds is None else f"{seconds:.0f} s"
                agent.held = f"waiting {how_long}: {why}"
            case AgentStarted(role=role):
                agent.kind = agent.kind or role
                agent.phase = "running"
                self._configured(agent)
            case TurnStarted():
                agent.in_turn = agent.thinking = True
                agent.phase = "running"
            case ToolProgress(ref=ref, message=message, percent=percent):
                done = f"{percent:.0f}% " if percent is not None else ""
                agent.progress, agent.progress_ref = done + message, ref
            case TurnEnded():
                agent.in_turn = agent.thinking = agent.waiting_call = False
                agent.calls_open = 0
                if agent.task_state is None and agent.id != MAIN:
                    agent.phase = "done"  # a planner: its turn ended with its plan
            case _:
                return False
        return True

    def _team(self, agent: AgentView, event: Event | Record, now: float) -> None:
        """Tasks, mail, todo lists, verdicts and compactions."""
        match event:
            case TaskCreated() | TaskChanged():
                self._task(event, now)
            case TodosChanged():
                agent.todos.apply(0, event)
            case Assessed(action=action, reasons=reasons):
                self.verdicts.append(Verdict(agent.id, action, "; ".join(reasons)))
                if agent.task_state is None:
                    agent.phase = MAIN_PHASE[action]
                    agent.outcome = "; ".join(reasons)
            case Verified(passed=passed, commands=commands):
                outcome = "verified" if passed else "verification failed"
                self.verdicts.append(Verdict(agent.id, outcome, "; ".join(commands)))
            case BlockedReported(reason=reason):
                agent.question, agent.blocked = reason, True
                if agent.task_state is None:
                    agent.phase = "blocked"
            case CompactionStarted(tokens=tokens, usable=usable):
                share = f" ({tokens * 100 // usable}% of its window)" if usable else ""
                self.compacting[agent.id] = f"{shown.tokens(tokens)} tokens{share}"
            case ContextCompacted(after=after, usage=usage, model=model):
                self.compacting.pop(agent.id, None)
                agent.context = after
                if usage is not None:
                    agent.own.add(usage, self._cost(model or agent.model, usage))
            case _:
                pass  # messages delivered, a call's start on disk: nothing new to show

    def _replied(
        self, agent: AgentView, calls: tuple[ToolCall, ...], usage: Usage | None, model: str
    ) -> None:
        agent.thinking, agent.held = False, ""
        agent.model = model or agent.model
        if usage is not None:
            agent.own.add(usage, self._cost(agent.model, usage))
        agent.calls_open = len(calls)
        agent.waiting_call = any(c.name in WAITING_TOOLS for c in calls)
        if calls:
            agent.last_call = calls[-1]

    def _call_ended(self, agent: AgentView, ref: str) -> None:
        if agent.progress_ref == ref:
            agent.progress = agent.progress_ref = ""
        agent.calls_open = max(agent.calls_open - 1, 0)
        if not agent.calls_open:
            agent.waiting_call = False
            agent.thinking = agent.in_turn  # the next model call, unless the turn ends

    def _task(self, event: TaskCreated | TaskChanged, now: float) -> None:
        task = self._agent(event.task, now)
        match event:
            case TaskCreated():
                task.kind, task.description = event.agent_type, event.description
                if event.task_kind == "tool":  # a call in the background: its tool's name
                    task.description = f"{event.agent_type}: {event.description}"
                    task.tool = True
                self._configured(task)
                if not task.owner:
                    task.owner = event.agent
                    self.agents[event.agent].children.append(task.id)
            case TaskChanged(state=state, reason=reason):
                if state != "waiting_decision":
                    task.question, task.blocked = "", False
                if state in ("failed", "cancelled"):
                    task.outcome = reason or state
        task.task_state = event.state
        self._settle(task, now)

    def _posted(self, event: MessagePosted) -> None:
        summary = abbreviate(event.summary, 200)
        self.mail.append(MailLine(event.id, event.mail, event.agent, event.to, summary))
        sender = self.agents.get(event.agent)
        if sender is None or sender.task_state is None:
            return
        if event.mail == "completed":
            sender.outcome = event.summary
        elif event.mail == "progress":
            percent = (event.data or {}).get("percent")
            done = f"{percent}% " if isinstance(percent, int | float) else ""
            sender.progress, sender.progress_ref = done + event.summary, ""
        elif event.mail in ("decision_required", "blocked"):
            sender.question, sender.blocked = event.summary, event.mail == "blocked"

    def _session(self, status: SessionStatus, detail: str, now: float) -> None:
        self.status, self.detail = status, detail
        if status == "running":
            self.ended = None
            return
        self.ended = now
        self.compacting.clear()  # a summary still running as the session ends is dropped
        main = self.agents.get(MAIN)
        if main is not None:
            main.phase = SESSION_END[status]
            main.in_turn = main.thinking = main.waiting_call = False
            self._settle(main, now)

    # --- helpers ------------------------------------------------------------------------

    def _at(self, at: float | None) -> float:
        return self._clock() if at is None else at

    def _agent(self, agent_id: str, now: float) -> AgentView:
        agent = self.agents.get(agent_id)
        if agent is None:
            agent = self.agents[agent_id] = AgentView(agent_id, started=now)
        return agent

    @staticmethod
    def _settle(agent: AgentView, now: float) -> None:
        """Its end time: set when it settles, cleared when it is revived."""
        settled = agent.status in ("done", "failed", "cancelled")
        if settled and agent.ended is None:
            agent.ended = now
        elif not settled:
            agent.ended = None


def _unknown(role: str) -> str:
    return ""
