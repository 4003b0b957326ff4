"""Event sinks for people and programs: a live, readable transcript, or JSON lines.

Both are the command line's and a library user's alike (`orchestrator.TranscriptSink`,
`orchestrator.JsonLinesSink`): given nothing, they print to standard output as
`orchestrator run` does."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TextIO, assert_never

import orjson

from orchestrator.cli.event_lines import compaction_line, plan_line, warning_line
from orchestrator.cli.style import (
    ARG_WIDTH,
    REASON_WIDTH,
    RESULT_WIDTH,
    Style,
    color_enabled,
    format_arguments,
)
from orchestrator.loop.assessment import Assessed, BlockedReported, Verified
from orchestrator.loop.compaction import CompactionStarted, ContextCompacted
from orchestrator.loop.todos import TodoItem, TodoList, TodosChanged
from orchestrator.messages import ToolResult
from orchestrator.state.approvals import ApprovalDecided, ApprovalParked, RemoteRefused
from orchestrator.state.checkpoints import (
    SessionForked,
    WorkspaceCheckpointed,
    WorkspaceRestored,
    WorkspaceRestoring,
)
from orchestrator.state.events import (
    AgentStarted,
    AssistantReplied,
    Event,
    MessageAdded,
    Notice,
    PermissionGranted,
    SessionStatusChanged,
    TextStreamed,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
    TurnEnded,
    TurnStarted,
    UsageUpdated,
    event_json,
)
from orchestrator.state.fallbacks import ModelSwitched
from orchestrator.state.hooks import HookDecided
from orchestrator.state.mailbox import MAIN, MessagePosted, MessagesDelivered
from orchestrator.state.mcp import McpAsked, McpPinned, McpToolsLoaded
from orchestrator.state.plans import PlanDecided, PlanSubmitted, ReplanRequested
from orchestrator.state.settings import SettingsChosen
from orchestrator.state.tasks import TaskChanged, TaskCreated, TaskUsed
from orchestrator.text import abbreviate, label, visible


def _scope(scope: tuple[str, ...] | None) -> str:
    if scope is None:
        return "anywhere"
    return label(", ".join(scope)) if scope else "nothing"


class TranscriptSink:
    """Prints what agents do as it happens: streamed text, each tool call with its
    arguments abbreviated, and its outcome. `out` is standard output unless given;
    `color` is `color_enabled(out)` unless given."""

    def __init__(
        self,
        out: TextIO | None = None,
        *,
        color: bool | None = None,
        todos_of: Callable[[str], TodoList] | None = None,
    ) -> None:
        self.out = sys.stdout if out is None else out
        self.style = Style(color_enabled(self.out) if color is None else color)
        self._mid_line = False
        # Each agent's whole list, shown when it changes: read from the session's state
        # when given (it is folded before the screen sees the event), else folded here.
        self._todos_of = todos_of
        self._todos: dict[str, TodoList] = {}
        self._listed: set[str] = set()  # agents whose whole list was shown once

    def _line(self, text: str) -> None:
        # Everything shown comes from models and tools: it is made visible as it is
        # composed (below), never written raw; the sink's own styling is added after.
        if self._mid_line:
            self.out.write("\n")
            self._mid_line = False
        self.out.write(text + "\n")
        self.out.flush()

    def say(self, text: str) -> None:
        """A line of the program's own for people (a note, the run's summary), in order
        with the transcript: after a line of streamed text, on a line of its own."""
        self._line(visible(text))

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        s = self.style
        # The main agent's lines as before; a subagent's carry its task id, and its text
        # is shown per reply (streamed text of agents running at once would interleave).
        # Every name in a line of ours is a label: one line, escaped, cut (text.label).
        who = "" if event.agent == MAIN else s.dim(f"[{label(event.agent, 40)}] ")
        match event:
            case AgentStarted() | TextStreamed() | AssistantReplied():
                self._speech(event, who)
            case ToolCallStarted() | ToolCallFinished() | ToolProgress():
                self._line(who + self._call_line(event))
            case TurnEnded(reason=reason, rounds=rounds, detail=detail):
                mark = s.green("✔") if reason == "completed" else s.yellow("■")
                extra = f": {label(detail, 4 * ARG_WIDTH)}" if detail else ""
                agent = label(event.agent, 40)
                self._line(f"{mark} {agent} turn {reason} after {rounds} rounds{extra}")
            case TaskCreated() | TaskChanged() | MessagePosted() | MessagesDelivered():
                self._team_line(event)
            case TodosChanged() | Assessed() | Verified() | BlockedReported():
                self._progress_line(event, who)
            case Notice(message=message):
                self._line(s.yellow(f"! {visible(message)}"))
            case (
                CompactionStarted()
                | ContextCompacted()
                | PlanSubmitted()
                | PlanDecided()
                | ReplanRequested()
                | ApprovalParked()
                | ApprovalDecided()
                | HookDecided()
            ):
                self._line(self._state_line(event, who))
            case RemoteRefused() | ModelSwitched():
                self._line(s.yellow(warning_line(event, who)))
            case PermissionGranted() | McpPinned() | McpToolsLoaded():
                self._given_line(event, who)
            case SettingsChosen(source="resume"):
                self._line(s.dim("  (settings changed for the rest of the session)"))
            case (
                MessageAdded()
                | TurnStarted()
                | UsageUpdated()
                | SessionStatusChanged()
                | SettingsChosen()
                | TaskUsed()
                | WorkspaceCheckpointed()
                | WorkspaceRestoring()
                | WorkspaceRestored()
                | SessionForked()
                | McpAsked()  # (asked at the terminal, or the call's error says it waits)
            ):
                # The command line says how the session ended, once, in its summary (and
                # a task on a worker's tokens there, counted by `task_usage`).
                pass
            case _:
                assert_never(event)

    def _given_line(self, event: PermissionGranted | McpPinned | McpToolsLoaded, who: str) -> None:
        """What the session was given: a person's grant, a changed MCP tool a person
        approved, tools an agent loaded (a first pin is not shown: the session took the
        tools as listed)."""
        s = self.style
        match event:
            case PermissionGranted(tool=tool, pattern=pattern):
                what = f"{label(tool)} commands matching {label(pattern)!r}" if pattern else tool
                self._line(s.dim(f"  (allowed {label(what)} for this session)"))
            case McpToolsLoaded(tools=tools):
                self._line(s.dim(f"  ({who}loaded {', '.join(map(label, tools))})"))
            case McpPinned(server=server, tools=tools, approved=approved):
                names = ", ".join(label(t.name) for t in tools)
                if approved:
                    self._line(
                        s.dim(f"  (MCP server {label(server)}: approved {names} as changed)")
                    )
            case _:
                assert_never(event)

    def _call_line(self, event: ToolCallStarted | ToolCallFinished | ToolProgress) -> str:
        s = self.style
        match event:
            case ToolCallStarted(call=call):
                arguments = label(format_arguments(call.arguments), 4 * ARG_WIDTH)
                return s.cyan(f"  → {label(call.name)}") + " " + s.dim(arguments)
            case ToolCallFinished(result=result):
                return self._outcome(result)
            case ToolProgress(tool=tool, message=message, percent=percent):
                done = f"{percent:.0f}%: " if percent is not None else ""
                return s.dim(f"  … {label(tool)}: {done}{label(message, 4 * ARG_WIDTH)}")
            case _:
                assert_never(event)

    def _state_line(
        self,
        event: CompactionStarted
        | ContextCompacted
        | PlanSubmitted
        | PlanDecided
        | ReplanRequested
        | ApprovalParked
        | ApprovalDecided
        | HookDecided,
        who: str,
    ) -> str:
        """A compaction (dim, it is housekeeping), a plan's step (bold, it is news), or
        a call parked for a person's approval (its id) and the decision on it, or a
        hook's decision."""
        match event:
            case ApprovalParked(ref=ref):
                return who + self.style.yellow(
                    f"  ⏸ call {label(event.id)} waits for a person's approval ({label(ref)})"
                )
            case ApprovalDecided(allow=allow, reason=reason):
                why = f": {label(reason, 4 * ARG_WIDTH)}" if reason else ""
                said = "approved" if allow else "denied"
                return who + self.style.dim(f"  (call {label(event.id)} {said}{why})")
            case HookDecided(event=hook_event, action=action, text=text):
                said = f": {label(text, 2 * ARG_WIDTH)}" if text else ""
                return who + self.style.dim(f"  (a {hook_event} hook: {action}{said})")
            case CompactionStarted() | ContextCompacted():
                return who + self.style.dim(compaction_line(event))
            case PlanSubmitted() | PlanDecided() | ReplanRequested():
                return self.style.bold(plan_line(event))
            case _:
                assert_never(event)

    def _speech(self, event: AgentStarted | TextStreamed | AssistantReplied, who: str) -> None:
        """The main agent's text as it streams; a subagent's, one line per reply."""
        s = self.style
        match event:
            case AgentStarted(agent=agent, role=role):
                if agent == MAIN:
                    self._line(s.bold(f"● {label(agent, 40)}") + s.dim(f" ({label(role, 40)})"))
            case TextStreamed(text=text):
                if event.agent == MAIN:
                    self.out.write(visible(text))
                    self.out.flush()
                    self._mid_line = True
            case AssistantReplied(message=message):
                if self._mid_line:
                    self.out.write("\n")
                    self._mid_line = False
                if who and message.text.strip():
                    self._line(who + visible(abbreviate(message.text, RESULT_WIDTH)))

    def _team_line(
        self, event: TaskCreated | TaskChanged | MessagePosted | MessagesDelivered
    ) -> None:
        """Delegation and the mailbox: a task made, a task's new state, a message."""
        s = self.style
        match event:
            case TaskCreated(task=task, agent_type=kind, description=description):
                scope = _scope(event.write_scope)
                deps = [*event.after, *(f"plan task {p}" for p in event.after_plan)]
                after = f", after {label(', '.join(deps), ARG_WIDTH)}" if deps else ""
                whose = (
                    f"in the background, for {label(event.agent, 40)}"
                    if event.task_kind == "tool"
                    else f"from {label(event.agent, 40)}, writes {scope}{after}"
                )
                self._line(
                    s.bold(f"⇢ {label(task, 40)}")
                    + f" {label(kind, 40)}: {label(description, ARG_WIDTH)}"
                    + s.dim(f" ({whose})")
                )
            case TaskChanged(task=task, state=state, reason=reason):
                # Cancelled (by its owner, or interrupted by a stop) is no failure of the work.
                marks = {
                    "completed": s.green("✔"),
                    "failed": s.red("✗"),
                    "cancelled": s.yellow("⊘"),
                }
                extra = f": {visible(abbreviate(reason, RESULT_WIDTH))}" if reason else ""
                self._line(f"{marks.get(state, s.cyan('◆'))} {label(task, 40)} {state}{extra}")
            case MessagePosted(mail=kind, to=to, summary=summary):
                self._line(
                    s.yellow(f"✉ {label(event.id, 40)} {kind}")
                    + f" {label(event.agent, 40)} → {label(to, 40)}: "
                    + visible(abbreviate(summary, RESULT_WIDTH))
                )
            case MessagesDelivered(ids=ids):
                read = label(", ".join(ids), 2 * ARG_WIDTH)
                self._line(s.dim(f"  ({label(event.agent, 40)} reads {read})"))

    def _progress_line(
        self, event: TodosChanged | Assessed | Verified | BlockedReported, who: str
    ) -> None:
        """Todo lists as they change, and the assessment of each turn's end."""
        s = self.style
        match event:
            case TodosChanged():
                self._todo_change(event, who)
            case Assessed(action=action, reasons=reasons, count=count, limit=limit):
                why = label("; ".join(reasons), REASON_WIDTH)
                agent = label(event.agent, 40)
                if action == "continue_from_context":
                    self._line(s.yellow(f"↻ {agent} auto-continuing {count}/{limit}: {why}"))
                elif action in ("blocked", "budget_exhausted"):
                    self._line(s.red(f"■ {agent} {action.replace('_', ' ')}: {why}"))
                elif action == "completed":
                    self._line(s.green(f"✔ {agent} done") + (f": {why}" if why else ""))
                else:
                    self._line(s.dim(f"… {agent} {action.replace('_', ' ')}: {why}"))
            case Verified(passed=passed, commands=commands, exit_code=code):
                what = label("; ".join(commands), 4 * ARG_WIDTH)
                if passed:
                    self._line(s.green(f"✔ verified: {what} passed"))
                else:
                    self._line(s.red(f"✗ verification failed (exit code {code}): {what}"))
            case BlockedReported(category=category, reason=reason):
                why = label(reason, REASON_WIDTH)
                self._line(who + s.red(f"■ blocked ({label(category, 40)}): {why}"))

    def _todo_change(self, event: TodosChanged, who: str) -> None:
        """A list as a diff: the whole list when it is new or replaced, else the items
        the change touched (one on the progress line itself)."""
        todos = self._todo_list(event)
        done, total = todos.progress()
        head = who + self.style.bold(f"☰ Tasks {done}/{total}")
        whole = event.replace or event.agent not in self._listed
        self._listed.add(event.agent)
        changed = [todos.items[i.id] for i in event.items if i.id in todos.items]
        items = list(todos.items.values()) if whole else changed
        if not whole and len(items) == 1:
            self._line(f"{head}: {self._todo(todos, items[0])}")
            return
        self._line(head)
        for item in items:
            self._line(who + "    " + self._todo(todos, item))

    def _todo_list(self, event: TodosChanged) -> TodoList:
        if self._todos_of is not None:
            return self._todos_of(event.agent)
        todos = self._todos.setdefault(event.agent, TodoList())
        todos.apply(0, event)
        return todos

    def _todo(self, todos: TodoList, item: TodoItem) -> str:
        s = self.style
        text = visible(abbreviate(item.content, RESULT_WIDTH))
        match item.status:
            case "completed":
                return s.green("✓ ") + s.dim(text)
            case "in_progress":
                doing = label(item.active_form, RESULT_WIDTH) if item.active_form else text
                return s.cyan(f"▶ {doing}")
            case "failed" | "cancelled":
                why = f": {label(item.failure, RESULT_WIDTH)}" if item.failure else ""
                return s.red(f"✗ {text} ({item.status}{why})")
        if todos.is_blocked(item):
            blockers = label(", ".join(todos.open_blockers(item)))
            return s.dim(f"⊘ {text} (blocked by {blockers})")
        return f"☐ {text}"

    def _outcome(self, result: ToolResult) -> str:
        content = result.content
        if result.name.startswith("todo_") and result.status == "ok":
            content = content.split("\n", 1)[0]  # the list itself is shown as it changes
        first = visible(abbreviate(content, RESULT_WIDTH))
        name = label(result.name)
        if result.status == "ok":
            return "    " + self.style.green(f"✓ {name}: ") + self.style.dim(first)
        return "    " + self.style.red(f"✗ {name} {result.status}: ") + first


class JsonLinesSink:
    """One JSON object per event per line, for other programs: the event's fields, plus
    `session` (its id), `time` (UTC, ISO 8601) and, for an event the journal keeps,
    `seq` (its record's journal seq, given by `seq_of` right after it was journaled).
    With agents running at once, lines may come out of seq order: `seq` is the order."""

    def __init__(
        self,
        out: TextIO | None = None,
        *,
        session: str = "",
        seq_of: Callable[[Event], int | None] | None = None,
    ) -> None:
        self.out = sys.stdout if out is None else out
        self.session = session
        self.seq_of = seq_of or (lambda event: None)

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        line = event_json(event)
        if self.session:
            line["session"] = self.session
        seq = self.seq_of(event)
        if seq is not None:
            line["seq"] = seq
        line["time"] = datetime.now(UTC).isoformat(timespec="milliseconds")
        self.out.write(orjson.dumps(line).decode() + "\n")
        self.out.flush()
