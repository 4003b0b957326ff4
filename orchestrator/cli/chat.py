"""The interactive session (`orchestrator chat`, or `run` without a goal): a person
talks to the main agent while its team works.

A line typed while the session runs is said to the main agent (it reads it at its next
step); a line typed when the main agent's work has ended starts it again with that line
(a follow-up, or the answer a blocked session waits for). Lines that start with `/` are
commands (`cli/chat_commands.py`). A call that needs approval, and a question the run
asks (a plan's approval, a task's revival), is asked above the input line and answered
on it. Ctrl+C stops the turn that runs (the session is interrupted, and resumable); at
the input line with nothing running, Ctrl+C twice (or Ctrl+D, or /quit) leaves.

`Chat` is the part that knows nothing of the terminal: it takes what was typed from a
channel and says what it has to say through a function, so tests drive it directly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

import trio

from orchestrator.cli import collector
from orchestrator.cli.chat_input import Key, Typed
from orchestrator.session.live import LiveSession
from orchestrator.session.shown import cost as shown_cost
from orchestrator.session.shown import tokens
from orchestrator.state.events import Event, EventSink
from orchestrator.team.drive import RunResult, drive
from orchestrator.team.queries import MAIN
from orchestrator.team.runtime import Team
from orchestrator.team.settings import RunSettings
from orchestrator.text import label

PROMPT = "› "
ANSWER_PROMPT = "answer› "
Action = Callable[[Team], Awaitable[str]]
Command = Callable[[str], Awaitable[bool]]  # a `/` line done; False: leave


class Focus:
    """The transcript's sink, showing every agent's lines, or only one agent's (and its
    subtasks') while `agent` is set (`/focus`)."""

    def __init__(self, inner: EventSink, live: LiveSession) -> None:
        self.inner = inner
        self.agent: str | None = None
        self._live = live

    def shows(self, agent: str) -> bool:
        if self.agent is None or agent == self.agent:
            return True
        tasks = self._live.state.tasks
        task = tasks.get(agent)
        while task is not None and task.owner_task:
            if task.owner_task == self.agent:
                return True
            task = tasks.get(task.owner_task)
        return False

    async def emit(self, event: Event, *, durable: bool = False) -> None:
        if self.shows(event.agent):
            await self.inner.emit(event, durable=durable)


class Questions:
    """The questions a run asks at the input line (a call's approval, a plan's): `read`
    is the next line typed, for an asker on a worker thread; `ask(prompt)` changes the
    input line's prompt while one waits."""

    def __init__(self, ask: Callable[[str], None] = lambda prompt: None) -> None:
        self._ask = ask
        self._waiting: trio.MemorySendChannel[str] | None = None

    @property
    def waiting(self) -> bool:
        return self._waiting is not None

    def read(self) -> str:
        """The next line typed ("" if Ctrl+C comes first), from a worker thread."""
        return trio.from_thread.run(self._next_line)

    async def answer(self, line: str) -> None:
        assert self._waiting is not None
        await self._waiting.send(line)

    def cancel(self) -> None:
        """Ctrl+C: the question waiting is answered "" (no)."""
        if self._waiting is not None:
            self._waiting.close()

    async def _next_line(self) -> str:
        send, receive = trio.open_memory_channel[str](1)
        self._waiting = send
        self._ask(ANSWER_PROMPT)
        try:
            return await receive.receive()
        except trio.EndOfChannel:
            return ""
        finally:
            self._waiting = None
            self._ask(PROMPT)


class Chat:
    """A session driven by what a person types (see the module's docstring). `say`
    prints a line for the person; `questions` are those the run asks."""

    def __init__(
        self,
        live: LiveSession,
        settings: RunSettings,
        *,
        say: Callable[[str], None],
        questions: Questions | None = None,
    ) -> None:
        self.live = live
        self.settings = settings
        self.say = say
        self.questions = questions or Questions()
        self.team: Team | None = None
        self.focus: Focus | None = None  # the transcript's filter, when one is shown
        self.result: RunResult | None = None
        self.left = False
        self.switch_to: str | None = None  # the fork `/rewind` made: the chat goes on there
        self._running = False
        self._scope: trio.CancelScope | None = None
        self._armed = False  # Ctrl+C once with nothing running: once more leaves
        self._waiting: list[Action] = []  # for the team of the drive that starts
        self._nursery: trio.Nursery | None = None

    @property
    def running(self) -> bool:
        return self._running

    async def run(
        self,
        typed: trio.MemoryReceiveChannel[Typed],
        commands: Command,
        message: str = "",
    ) -> None:
        """Drive the session (from `message`, "" to go on where it stands) and take what is
        typed until the person leaves; a line that starts with `/` goes to `commands`
        (`chat_commands.Commands(chat).run`: False, leave). A turn running when the
        person leaves is stopped (interrupted)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._start(message)
            async for item in typed:
                if not await self._take(item, commands):
                    break
            self.left = True
            nursery.cancel_scope.cancel()

    async def _take(self, item: Typed, commands: Command) -> bool:
        """What one typed thing does; False: leave."""
        if item is Key.END:
            return False
        if item is Key.INTERRUPT:
            return self._interrupt()
        self._armed = False
        if self.questions.waiting:
            await self.questions.answer(item)
            return True
        text = item.strip()
        if not text:
            return True
        if text.startswith("/"):
            return await commands(text)
        await self.tell(text)
        return True

    def _interrupt(self) -> bool:
        self.questions.cancel()
        if self._running and self._scope is not None and not self._armed:
            self._scope.cancel()
            self._armed = True
            self.say("stopping the turn… (Ctrl+C again to leave)")
            return True
        if self._armed:
            return False
        self._armed = True
        self.say("Ctrl+C again (or /quit) to leave; the session stays resumable")
        return True

    async def tell(self, text: str) -> None:
        """Say `text` to the main agent: now while the session runs, else it starts
        again with it."""
        if not self._running:
            self._start(text)
        elif self.team is not None:
            await self.team.say(text)
        else:
            self._waiting.append(lambda team: _said(team, text))

    def with_team(self, action: Action) -> None:
        """Do `action` with the running team (it says what it did), starting the session
        again for it when nothing runs: then it is done before the main agent's turn (an
        answer reaches its task before the main agent looks again)."""
        if self.team is not None:
            self.spawn(self._act(self.team, action))
            return
        if self._running:
            self._waiting.append(action)
            return
        if self.live.state.status == "completed" and not self._pending_mail():
            self.say("the session is completed: type a message to follow it up first")
            return
        self._waiting.append(action)
        self._start("")

    # --- the drives -------------------------------------------------------------------

    def _start(self, message: str) -> None:
        self._running = True
        self.spawn(self._drive(message))

    def spawn(self, work: Awaitable[None]) -> None:
        """Run `work` beside the chat (it ends when the chat does)."""
        assert self._nursery is not None

        async def run() -> None:
            await work

        self._nursery.start_soon(run)

    async def _drive(self, message: str) -> None:
        settings = dataclasses.replace(self.settings, message=message, on_team=self._on_team)
        result = self.result = None  # None: this run was stopped
        try:
            with trio.CancelScope() as self._scope:
                collector.settle()  # (the first message: the chat is set up)
                result = await drive(self.live, settings)
        finally:
            self.team, self._scope, self._running = None, None, False
        if result is None:
            self.say("turn stopped; the session is interrupted: type a message to go on")
            return
        self.result = result
        self.say(self._ended(result))
        waiting, self._waiting = self._waiting, []
        if self._pending_mail() or waiting:
            self._waiting = waiting
            self._start("")  # said while it ended: the main agent reads it now

    async def _on_team(self, team: Team) -> None:
        self.team = team
        while self._waiting:
            await self._act(team, self._waiting.pop(0))

    async def _act(self, team: Team, action: Action) -> None:
        try:
            said = await action(team)
        except ValueError as exc:  # TodoError too: a refusal, said as it is
            said = f"refused: {exc}"
        if said:
            self.say(said)

    def _pending_mail(self) -> bool:
        return bool(self.live.state.mailbox.undelivered(MAIN))

    def _ended(self, result: RunResult) -> str:
        used = f"{tokens(result.usage.total_tokens)} tokens · {shown_cost(result.cost)}"
        detail = f": {label(result.detail, 300)}" if result.detail else ""
        line = f"— {result.status}{detail} ({used})"
        match result.status:
            case "completed":
                return f"{line}\n  type a follow-up, /tasks to look, /quit to leave"
            case "blocked" if result.questions:
                asked = result.questions[0]
                return (
                    f"{line}\n  type your answer (it goes to {label(asked.sender, 40)} as "
                    f"the answer to {asked.message_id}), or /answer ID TEXT"
                )
        return f"{line}\n  type a message to go on, /quit to leave"


async def _said(team: Team, text: str) -> str:
    await team.say(text)
    return ""
