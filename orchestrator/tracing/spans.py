"""A session's spans, derived from its events and journal records: pure, no OpenTelemetry.

`Spans.see(item, at)` takes an event as the session emits it (live), or a record read
back from the journal (`seq` given), and returns the spans that ended with it, each whole
(`Ended`: its key, name, parent's key, start, end, attributes and error). Nothing is
exported before it ends, so a span is one SDK call, made once (tracing/otel.py).

Every span has a key that names what it is in the session and is the same whoever
derives it: the live process, or a later one reading the journal back. The span's id is
a hash of the trace id and its key (`span_id`), so a resumed session continues the same
trace, and ends as interrupted the spans a kill left open (`interrupt`):

- `run:N`: `session` (N = 1: the root) or `session resumed` (under `run:1`), from the
  N-th `session_status` running to the status record that ends that run;
- `turn:AGENT:N`: `invoke_agent ROLE`, under `task:AGENT` (a subagent) or the run, from
  `turn_started` to `turn_ended`;
- `chat:AGENT:N`: `chat MODEL`, a model call, under the agent's turn, from its last
  activity to `assistant_replied`;
- `call:REF`: `execute_tool TOOL`, under the agent's turn, from `tool_call_started`
  (read back: `call_started`) to its result;
- `task:ID`: `task AGENT_TYPE`, under `call:REF` (the delegating call), from
  `task_created` to its settling;
- `compaction:AGENT:N`: `compaction`, under the agent's turn, from `compaction_started`
  to `context_compacted`;
- `plan:N`: `plan submitted`, `plan approved`, `replan requested`..., under the call
  that made it (else the run), without duration.

A status record other than `running` ends the run: every span still open ends with it
(a turn a run leaves unfinished goes on in the next run under the same parent).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestrator.loop.compaction import CompactionStarted, ContextCompacted
from orchestrator.prices.cost import Price, call_cost
from orchestrator.state.events import (
    AgentStarted,
    AssistantReplied,
    CallResult,
    EffectStarted,
    Event,
    Record,
    SessionStatusChanged,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
from orchestrator.state.plans import PlanDecided, PlanSubmitted, ReplanRequested
from orchestrator.state.settings import SettingsChosen
from orchestrator.state.tasks import SETTLED, TaskChanged, TaskCreated
from orchestrator.tracing.ended import (
    CONTENT_CHARS,
    INTERRUPTED,
    Attributes,
    Ended,
    Open,
    call_key,
    finish,
    provider_and_model,
    usage_attributes,
)

_TASK_AGENT = re.compile(r"t\d+(?:\.t\d+)*")  # t3, and its children t3.t1, ...
_SHOWN = (
    TurnStarted,
    TurnEnded,
    AssistantReplied,
    ToolCallStarted,
    EffectStarted,
    CallResult,
    CompactionStarted,
    ContextCompacted,
)
"""What a session sees of a task on a worker's work (shown, never journaled here)."""


@dataclass
class Spans:
    """The open spans of one session, moved by its events and records (see the module)."""

    session: str
    prices: Mapping[str, Price] = field(default_factory=dict)
    capture_content: bool = False
    # The task whose own journal this is, on a worker ("": the session's): its calls'
    # keys are `call:TASK/REF` (its refs are its journal's), and its own task span, the
    # runs and plans are the session's to give, not its.
    on_worker: str = ""
    runs: int = 0
    open: dict[str, Open] = field(default_factory=dict)
    last_at: int = 0  # the time of the last item seen
    _roles: dict[str, str] = field(default_factory=dict)
    _turns: dict[str, int] = field(default_factory=dict)
    _chats: dict[str, int] = field(default_factory=dict)
    _compactions: dict[str, int] = field(default_factory=dict)
    _busy_since: dict[str, int] = field(default_factory=dict)  # when its model was asked
    _replied_at: dict[str, int] = field(default_factory=dict)  # its last reply's time
    _calls: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # ref: id, tool, args
    _calls_ended: set[str] = field(default_factory=set)  # refs whose span has ended
    _plans: int = 0
    _workers: bool = False  # the session's tasks run on workers (its settings say)

    def see(self, item: Event | Record, at: int, seq: int | None = None) -> list[Ended]:
        """The spans that `item` (an event, or a journal record at `seq`) ends; it may
        open others. `at`: its time, ns since the epoch."""
        self.last_at = at
        if self.on_worker:
            return self._kept(self._see(item, at, seq))
        if self._workers and isinstance(item, _SHOWN) and _TASK_AGENT.fullmatch(item.agent):
            # A task on a worker's work, told again from its own journal to be shown: its
            # worker traces it (tracing/task.py).
            return []
        return self._see(item, at, seq)

    def _see(self, item: Event | Record, at: int, seq: int | None) -> list[Ended]:
        match item:
            case SessionStatusChanged(status="running"):
                ended = self.interrupt(at)
                self._start_run(at)
                return ended
            case SessionStatusChanged(status=status, detail=detail):
                return self._end_run(at, status, detail)
            case AgentStarted(agent=agent, role=role):
                self._roles[agent] = role
            case SettingsChosen(settings=settings):
                self._workers = settings.engine == "dbos" and settings.engine_workers
            case TurnStarted(agent=agent):
                self._start_turn(agent, at)
            case TurnEnded():
                return self._end(f"turn:{item.agent}:{self._turns.get(item.agent, 0)}", at, item)
            case AssistantReplied():
                return self._replied(item, at, seq)
            case _:
                return self._see_more(item, at)
        return []

    def _see_more(self, item: Event | Record, at: int) -> list[Ended]:
        match item:
            case ToolCallStarted(agent=agent, ref=ref, call=call):
                self._start_call(agent, ref, at, (call.id, call.name, call.arguments))
            case EffectStarted(agent=agent, ref=ref) if ref in self._calls:
                self._start_call(agent, ref, at, self._calls[ref])
            case CallResult(agent=agent, ref=ref):
                known = self._calls.pop(ref, None)
                if known is not None and self.call_key(ref) not in self.open:
                    # Read back, a call whose start was not recorded (an idempotent one):
                    # from its reply on.
                    self._start_call(agent, ref, self._replied_at.get(agent, at), known)
                self._busy_since[agent] = at
                self._calls_ended.add(ref)
                return self._end(self.call_key(ref), at, item)
            case TaskCreated():
                self._start_task(item, at)
            case TaskChanged(state=state) if state in SETTLED:
                return self._end(f"task:{item.task}", at, item)
            case CompactionStarted(agent=agent):
                number = self._compactions.get(agent, 0) + 1
                key = f"compaction:{agent}:{number}"
                attributes: Attributes = {"orchestrator.compaction.reason": item.reason}
                self._open(key, "compaction", self._turn_of(agent), at, attributes)
            case ContextCompacted(agent=agent):
                self._compactions[agent] = self._compactions.get(agent, 0) + 1
                self._busy_since[agent] = at
                return self._end(f"compaction:{agent}:{self._compactions[agent]}", at, item)
            case PlanSubmitted() | PlanDecided() | ReplanRequested():
                return [self._plan(item, at)]
            case _:
                pass
        return []

    def interrupt(self, at: int) -> list[Ended]:
        """End every open span as interrupted, at `at` (where a kill left them)."""
        self._calls_ended.update(
            key.removeprefix(self.call_key("")) for key in self.open if key.startswith("call:")
        )
        ended = [
            Ended(
                span.key,
                span.name,
                span.parent,
                span.start,
                max(at, span.start),
                {**span.attributes, "orchestrator.interrupted": True},
                INTERRUPTED,
            )
            for span in self.open.values()
        ]
        self.open.clear()
        return self._kept(ended) if self.on_worker else ended

    def call_key(self, ref: str) -> str:
        """The key of call `ref`'s span (a task's on a worker: named by its task too)."""
        return call_key(f"{self.on_worker}/{ref}" if self.on_worker else ref)

    def _kept(self, ended: list[Ended]) -> list[Ended]:
        """On a worker, the spans that are not the session's to give."""
        own = f"task:{self.on_worker}"
        return [e for e in ended if e.key != own and e.kind not in ("run", "plan")]

    # -- runs, turns, calls, tasks

    def _start_run(self, at: int) -> None:
        self.runs += 1
        first = self.runs == 1
        attributes: Attributes = {
            "orchestrator.session.id": self.session,
            "gen_ai.conversation.id": self.session,
            "orchestrator.run": self.runs,
        }
        name = "session" if first else "session resumed"
        self._open(self._run_key(), name, None if first else "run:1", at, attributes)

    def _end_run(self, at: int, status: str, detail: str) -> list[Ended]:
        run = self.open.pop(self._run_key(), None)
        ended = [self._close(span, at) for span in self.open.values()]
        self.open.clear()
        if run is not None:
            run.attributes["orchestrator.session.status"] = status
            error = detail or status if status == "failed" else ""
            ended.append(self._close(run, at, error=error))
        return ended

    def _run_key(self) -> str:
        return f"run:{max(self.runs, 1)}"

    def _turn_of(self, agent: str) -> str:
        """The span an agent's work hangs under: its turn (the last, if none is open)."""
        number = self._turns.get(agent)
        if number is not None:
            return f"turn:{agent}:{number}"
        return self._home(agent)

    def _home(self, agent: str) -> str:
        return f"task:{agent}" if _TASK_AGENT.fullmatch(agent) else self._run_key()

    def _start_turn(self, agent: str, at: int) -> None:
        number = self._turns.get(agent, 0) + 1
        self._turns[agent] = number
        self._busy_since[agent] = at
        role = self._roles.get(agent, agent)
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": role,
            "gen_ai.agent.id": agent,
            "gen_ai.conversation.id": self.session,
        }
        key, name = f"turn:{agent}:{number}", f"invoke_agent {role}"
        self._open(key, name, self._home(agent), at, attributes)

    def _replied(self, item: AssistantReplied, at: int, seq: int | None) -> list[Ended]:
        agent, message = item.agent, item.message
        number = self._chats.get(agent, 0) + 1
        self._chats[agent] = number
        if seq is not None:  # (read back: the refs of its calls are known by its seq)
            for index, call in enumerate(message.tool_calls):
                self._calls[f"{seq}.{index}"] = (call.id, call.name, call.arguments)
        provider, model = provider_and_model(item.model)
        attributes: Attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "gen_ai.response.model": model,
            "gen_ai.agent.name": self._roles.get(agent, agent),
            "gen_ai.agent.id": agent,
        }
        if message.stop_reason:
            attributes["gen_ai.response.finish_reasons"] = (message.stop_reason,)
        if message.usage is not None:
            cost = call_cost(self.prices, item.model, message.usage)
            attributes.update(usage_attributes(message.usage, cost))
        start = min(self._busy_since.get(agent, at), at)
        self._busy_since[agent] = self._replied_at[agent] = at
        key = f"chat:{agent}:{number}"
        return [Ended(key, f"chat {model}", self._turn_of(agent), start, at, attributes)]

    def _start_call(self, agent: str, ref: str, at: int, call: tuple[str, str, str]) -> None:
        if ref in self._calls_ended:
            # Started again after a resume (a call in the background revived): its span,
            # which its commands' TRACEPARENT names, was ended as interrupted already.
            return
        call_id, tool, arguments = call
        attributes: Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.agent.name": self._roles.get(agent, agent),
            "gen_ai.agent.id": agent,
            "orchestrator.call.ref": ref,
        }
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = arguments[:CONTENT_CHARS]
        key = self.call_key(ref)
        self._open(key, f"execute_tool {tool}", self._turn_of(agent), at, attributes)

    def _start_task(self, item: TaskCreated, at: int) -> None:
        attributes: Attributes = {
            "orchestrator.task.id": item.task,
            "orchestrator.task.agent_type": item.agent_type,
            "orchestrator.task.depth": item.depth,
            "gen_ai.agent.name": item.agent_type,
            "gen_ai.agent.id": item.task,
        }
        if item.plan_ref:
            attributes["orchestrator.task.plan_ref"] = item.plan_ref
        parent = self.call_key(item.ref) if item.ref else self._turn_of(item.agent)
        self._open(f"task:{item.task}", f"task {item.agent_type}", parent, at, attributes)

    def _plan(self, item: PlanSubmitted | PlanDecided | ReplanRequested, at: int) -> Ended:
        self._plans += 1
        ref = ""
        attributes: Attributes = {}
        match item:
            case PlanSubmitted(version=version, ref=ref):
                name = "plan submitted"
                attributes = {"orchestrator.plan.version": version}
                attributes["orchestrator.plan.tasks"] = len(item.plan.tasks)
            case PlanDecided(version=version, decision=decision, by=by):
                name = f"plan {decision}"
                attributes = {"orchestrator.plan.version": version, "orchestrator.plan.by": by}
            case ReplanRequested(plan_task=task, ref=ref):
                name = "replan requested"
                attributes = {"orchestrator.plan.task": task}
        parent = self.call_key(ref) if ref else self._run_key()
        return Ended(f"plan:{self._plans}", name, parent, at, at, attributes)

    # -- the open spans

    def _open(self, key: str, name: str, parent: str | None, at: int, attrs: Attributes) -> None:
        self.open[key] = Open(key, name, parent, at, attrs)

    def _end(self, key: str, at: int, item: Any) -> list[Ended]:
        span = self.open.pop(key, None)
        if span is None:
            return []
        error = finish(span.attributes, item, self.prices, self.capture_content)
        return [self._close(span, at, error=error)]

    @staticmethod
    def _close(span: Open, at: int, *, error: str = "") -> Ended:
        end = max(at, span.start)
        return Ended(span.key, span.name, span.parent, span.start, end, span.attributes, error)
