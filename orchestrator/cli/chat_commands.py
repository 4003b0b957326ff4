"""The chat's commands, the lines that start with `/` (see HELP). What acts on the team
(send, answer, cancel, a todo change, compact) is done by the running team, and when
nothing runs the session starts again for it; what only looks (tasks, todos, budget,
help) reads the session's state.
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from orchestrator.cli.out import command
from orchestrator.cli.render import TranscriptSink
from orchestrator.errors import CompactionFailed, NothingToCompact
from orchestrator.loop.todo_changes import Change, create, move, update
from orchestrator.loop.todos import TodoItem, TodoList, TodoStatus, now_ms, render
from orchestrator.prices.cost import call_cost
from orchestrator.session.shown import cost as shown_cost
from orchestrator.session.shown import duration, tokens
from orchestrator.state.events import CallResult, EffectStarted
from orchestrator.state.fold import USER
from orchestrator.state.mailbox import Mail
from orchestrator.team.queries import MAIN
from orchestrator.team.runtime import Team
from orchestrator.text import label
from orchestrator.tools.todos import TodoSpec
from orchestrator.view.frame import plain_frame
from orchestrator.view.history import journal_events, session_view
from orchestrator.view.model import ViewModel

if TYPE_CHECKING:
    from orchestrator.cli.chat import Chat

HELP = """\
Type a message for the main agent (while it works, or to follow up when it is done).
  /tasks                       the tree of agents and tasks: state, tokens, cost, time
  /send TASK TEXT              say TEXT to a running task (t1, t2, ...)
  /answer ID TEXT              answer a task's open question (its message id, m12)
  /cancel TASK [REASON]        cancel a task and everything under it
  /focus TASK                  show only TASK's lines (and its subtasks'), its past first
  /focus                       show every agent's lines again
  /todos [TASK]                the main agent's todo list (or a task's)
  /todos add TEXT              add an item to the main agent's list
  /todos done|start|cancel ID  mark an item of it
  /todos move ID POSITION      move an item (1: the first)
  /compact [AGENT]             compact the main agent's context (or AGENT's) now
  /budget                      what the session used, against its budgets
  /rewind [POINT]              the last points; back to one, the files too (the
                               chat goes on in the fork, the path left stays)
  /quit                        leave: a running turn is stopped, the session stays
                               resumable (orchestrator chat --resume ID)
Ctrl+C stops the running turn; twice leaves. Up and down walk the input history."""

_MARKS: dict[str, TodoStatus] = {"done": "completed", "start": "in_progress", "cancel": "cancelled"}
_Make = Callable[[TodoList, int], list[TodoItem]]  # the items a change makes of the list


class Commands:
    """The `/` commands of one chat. `model`: the live view's, for `/tasks` (None: the
    session's journal is folded for each)."""

    def __init__(
        self, chat: Chat, model: ViewModel | None = None, args: argparse.Namespace | None = None
    ) -> None:
        self.chat = chat
        self.model = model
        self._args = args  # the chat's command line: its --sessions-dir, for printed commands

    async def run(self, line: str) -> bool:
        """Do the command `line`; False: leave."""
        name, _, rest = line[1:].partition(" ")
        if name in ("quit", "exit", "q"):
            return False
        if name == "rewind":
            from orchestrator.cli.chat_rewind import rewind

            return await rewind(self.chat, rest.strip())
        handlers = {
            "help": self._help,
            "?": self._help,
            "tasks": self._tasks,
            "send": self._send,
            "answer": self._answer,
            "cancel": self._cancel,
            "focus": self._focus,
            "todos": self._todos,
            "compact": self._compact,
            "budget": self._budget,
        }
        handler = handlers.get(name)
        if handler is None:
            self.chat.say(f"unknown command /{label(name, 40)}; /help lists them")
        else:
            await handler(rest.strip())
        return True

    async def _help(self, rest: str) -> None:
        self.chat.say(HELP)

    async def _tasks(self, rest: str) -> None:
        model = self.model or session_view(
            self.chat.live.directory, prices=self.chat.settings.prices
        )
        self.chat.say(plain_frame(model, model.now(), still=True).rstrip("\n"))

    async def _send(self, rest: str) -> None:
        parts = self._two(rest, "usage: /send TASK TEXT")
        if parts is not None:
            task, text = parts
            self.chat.with_team(lambda team: _sent(team.send(task, text), f"to {task}"))

    async def _answer(self, rest: str) -> None:
        parts = self._two(rest, "usage: /answer ID TEXT")
        if parts is not None:
            asked, text = parts
            self.chat.with_team(lambda team: _sent(team.answer(asked, text), f"to {asked}"))

    def _two(self, rest: str, usage: str) -> tuple[str, str] | None:
        """A command's target and its text, or None (its usage said)."""
        parts = rest.split(maxsplit=1)
        if len(parts) < 2:
            self.chat.say(usage)
            return None
        return parts[0], parts[1]

    async def _cancel(self, rest: str) -> None:
        if not rest:
            self.chat.say("usage: /cancel TASK [REASON]")
            return
        task, _, why = rest.partition(" ")
        reason = why.strip() or "cancelled by the person"
        self.chat.with_team(lambda team: _cancelled(team, task, reason))

    async def _compact(self, rest: str) -> None:
        agent = rest or MAIN
        # Made at the agent's next round boundary: not waited for before its turn.
        self.chat.with_team(lambda team: _spawned(self.chat, _compacted(team, agent)))

    async def _budget(self, rest: str) -> None:
        self.chat.say(self._budget_text())

    async def _focus(self, agent: str) -> None:
        focus, say = self.chat.focus, self.chat.say
        if focus is None:
            say("no transcript is shown here to focus")
            return
        if not agent:
            focus.agent = None
            say("every agent's lines are shown again")
            return
        state = self.chat.live.state
        if agent not in state.agents and state.tasks.get(agent) is None:
            say(f"no agent or task {label(agent, 40)} in this session (/tasks lists them)")
            return
        focus.agent = agent
        past = io.StringIO()
        sink = TranscriptSink(past, color=False)
        for _, record in journal_events(self.chat.live.directory):
            # The records a transcript shows (a call's own records are not events).
            if not isinstance(record, EffectStarted | CallResult) and focus.shows(record.agent):
                await sink.emit(record)
        shown = past.getvalue().rstrip("\n")
        say(
            f"── {label(agent, 40)} so far ──\n{shown or '(nothing yet)'}\n── from now on, only "
            f"{label(agent, 40)}'s lines (/focus to see everyone's) ──"
        )

    async def _todos(self, rest: str) -> None:
        verb, _, arg = rest.partition(" ")
        arg = arg.strip()
        say, state = self.chat.say, self.chat.live.state
        if verb in ("", MAIN) or (verb not in ("add", "move", *_MARKS) and not arg):
            agent = verb or MAIN
            if agent != MAIN and agent not in state.agents:
                say(f"no agent {label(agent, 40)} in this session (/tasks lists them)")
                return
            say(render(state.todo_list(agent)))
            return
        if verb == "add" and arg:
            self._change(
                f"added {arg!r}", lambda todos, at: [create(todos, TodoSpec(content=arg), at=at)]
            )
        elif verb in _MARKS and arg:
            status = _MARKS[verb]
            failure = "cancelled by the person" if verb == "cancel" else None
            change = Change(id=arg, status=status, failure=failure)
            self._change(
                f"marked item {arg} {status}", lambda todos, at: [update(todos, change, at=at)]
            )
        elif verb == "move" and len(arg.split()) == 2 and arg.split()[1].isdigit():
            item, position = arg.split()
            self._change(
                f"moved item {item} to position {position}",
                lambda todos, at: move(todos, item, int(position)),
                replace=True,
            )
        else:
            say("usage: /todos [TASK] | add TEXT | done|start|cancel ID | move ID POSITION")

    def _change(self, said: str, make: _Make, *, replace: bool = False) -> None:
        async def act(team: Team) -> str:
            todos = team.state.todo_list(MAIN)
            items = make(todos, now_ms())  # a TodoError is said as a refusal
            await team.change_todos(items, said, replace=replace)
            return f"{said}; the main agent is told\n{render(team.state.todo_list(MAIN))}"

        self.chat.with_team(act)

    def _budget_text(self) -> str:
        state = self.chat.live.state
        settings = state.settings
        prices = self.chat.settings.prices
        used = sum(u.total_tokens for u in state.usage_by_model.values())
        costs = [call_cost(prices, model, u) for model, u in state.usage_by_model.items()]
        spent = None if None in costs else sum(c for c in costs if c is not None)
        rows = [
            ("model rounds", str(state.rounds), settings and settings.budget_rounds),
            ("tokens", tokens(used), settings and settings.budget_tokens),
            ("cost", shown_cost(spent), settings and settings.budget_cost),
        ]
        lines = [
            f"{what}: {now} of {limit if limit is not None else 'no limit'}"
            for what, now, limit in rows
        ]
        wall = settings.budget_wall if settings is not None else None
        lines.append(f"time per run: {duration(wall) if wall else 'no limit'}")
        resume = command("resume", self.chat.live.id, self._args)
        flags = "(or --budget-tokens N, --budget-cost DOLLARS, --budget-time SECONDS)"
        return "\n".join(lines) + f"\nchange them with: {resume} --budget-rounds N {flags}"


async def _sent(posting: Awaitable[Mail], to: str) -> str:
    mail = await posting
    return f"sent {mail.message_id} {to}"


async def _spawned(chat: Chat, work: Awaitable[str]) -> str:
    async def said() -> None:
        chat.say(await work)

    chat.spawn(said())
    return ""


async def _cancelled(team: Team, task: str, reason: str) -> str:
    if team.state.tasks.get(task) is None:
        raise ValueError(f"no task {task!r} in this session")
    cancelled = await team.cancel(USER, task, reason)
    return f"cancelled {', '.join(cancelled)}" if cancelled else f"{task} had already settled"


async def _compacted(team: Team, agent: str) -> str:
    try:
        done = await team.compact(agent)
    except (CompactionFailed, NothingToCompact) as exc:
        return f"not compacted: {exc}"
    if done is None:
        return f"not compacted: {agent}'s team closed first"
    return f"compacted {agent}: {done.before:,} → {done.after:,} tokens ({done.method})"
