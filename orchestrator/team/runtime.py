"""The team: the agents of one session and the mail between them, as a small facade over
the parts that each own one job: the `Postbox` (mail, wake-ups, interrupts), the
`Scheduler` (task states, the queue, the task loops), `Turns` (what each agent's turns
run with), `Rounds` (what the team adds to each round), `Oversight` (assessment,
verification, budgets, todos), `Delegation` (what the coordination tools call) and
`Writes` (who wrote what).

Everything durable goes through the session: the parts emit records, the session
journals and folds them, and the parts read the folded state back. What they keep
themselves is only runtime, so after a crash a new team over the resumed session is in
the same place. A runner works a task through a `TaskPort` (port.py), not the team.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import trio

from orchestrator.agent import TurnDeps
from orchestrator.loop.compaction import ContextCompacted
from orchestrator.loop.todos import TodoItem, TodosChanged, render
from orchestrator.state.events import EventSink
from orchestrator.state.fold import USER, SessionState
from orchestrator.state.mailbox import Mail, Priority
from orchestrator.team.background import BackgroundCalls
from orchestrator.team.compactor import Compactor
from orchestrator.team.delegation import Delegation
from orchestrator.team.hooks import TeamHooks
from orchestrator.team.oversight import Oversight
from orchestrator.team.plan_host import Planning
from orchestrator.team.port import Outlet, Runner, SessionLike, TeamPort
from orchestrator.team.postbox import Changes, Postbox, watch_stalls
from orchestrator.team.queries import MAIN
from orchestrator.team.rounds import Rounds
from orchestrator.team.scheduler import Scheduler
from orchestrator.team.settings import RunSettings, Seat
from orchestrator.team.turns import ModelCalls, Turns
from orchestrator.team.writes import Writes


class Team:
    """The agents of one session and the mail between them."""

    def __init__(
        self,
        session: SessionLike,
        sink: EventSink,
        run: RunSettings,
        seat: Seat,
        runner: Runner,
        nursery: trio.Nursery | None = None,
        *,
        screen: EventSink | None = None,
    ) -> None:
        self.session = session
        self.sink = sink  # journals (via the session) and shows every event
        self.run = run  # the run's wiring
        self.seat = seat  # the session: workspace, id, its journaled settings
        self.runner = runner
        self.changes = Changes()
        limits = seat.limits
        self.hooks = TeamHooks(
            run.hooks,
            session,
            sink,
            session_id=seat.session_id,
            workspace=seat.workspace.root,
            redact=run.redact,
            max_sent_back=seat.settings.max_auto_continues,
        )
        sink = self.sink = self.hooks.watching(sink)  # (the events hooks are told of)
        # Each part is made after what it needs, and given it. The one loop (a task's
        # turns may delegate, and a delegation starts a task's loop through the port,
        # which holds the scheduler) is closed last: `scheduler.run_with(runner, port)`.
        self.postbox = Postbox(session, sink, limits.caps, self.changes, prefix=seat.mail_prefix)
        self.scheduler = Scheduler(
            session,
            sink,
            self.changes,
            self.postbox,
            limits.max_live,
            role_limit=run.definitions.live_limit,
            prefix=seat.task_prefix,
        )
        self.oversight = Oversight(
            session,
            sink,
            seat.assess(run),
            definitions=run.definitions,
            workspace=seat.workspace,
            base_tools=run.all_tools,
            session_id=seat.session_id,
            session_directory=seat.directory,
            redact=run.redact,
        )
        writes = Writes(session, self.postbox, seat.other_tasks)
        self.delegation = Delegation(
            run,
            limits,
            session,
            sink,
            self.changes,
            self.postbox,
            self.scheduler,
            self.oversight,
            writes,
        )
        models = ModelCalls(run, limits.max_model_calls, session.state.fallbacks)
        self.compactor = Compactor(
            session,
            sink,
            seat.workspace,
            models=models.model,  # the summaries take model-call slots as the turns do
            window=run.window,
            files=writes.files_written,
            nursery=nursery,  # background summaries (None: every summary is waited for)
            settings=seat.settings,
            hooks=self.hooks,
        )
        # Calls in the background run in the team's nursery (none: no call may).
        self.background = (
            BackgroundCalls(
                session, sink, seat, self.scheduler, self.postbox, nursery, redact=run.redact
            )
            if nursery is not None
            else None
        )
        rounds = Rounds(session, self.postbox, self.oversight, self.compactor)
        self.planning = Planning(session, sink, self.scheduler.cancel, run.plan_limits)
        self.turns = Turns(
            run,
            seat,
            session,
            sink,
            rounds,
            self.delegation,
            self.oversight,
            writes,
            self.planning,
            models,
            self.compactor.usable,
            self.background,
            tool_hooks=self.hooks or None,
            asking=self.hooks.asking if self.hooks and run.person_approves else None,
        )
        self.port = TeamPort(
            session,
            seat.session_id,
            mail=self.postbox,
            tasks=self.scheduler,
            turns=self.turns,
            oversight=self.oversight,
            events=Outlet(sink, screen),
        )
        self.scheduler.run_with(runner, self.port, self.background)

    @property
    def state(self) -> SessionState:
        return self.session.state

    @property
    def changed(self) -> trio.Event:
        """A `trio.Event` set at the next change of a task or of the mail."""
        return self.changes.event

    def turn_deps(self, agent: str) -> TurnDeps:
        return self.turns.turn_deps(agent)

    def is_running(self, task_id: str) -> bool:
        """Whether `task_id`'s loop runs (or waits for mail) in this team."""
        return self.scheduler.is_running(task_id)

    def restart(self, task_id: str) -> None:
        """Run again a task that was live when the session stopped (its loop starts as a
        new instance over the same context)."""
        self.scheduler.resume(task_id)

    def queue(self, task_id: str) -> None:
        """Start pending `task_id` when there is room under the live limits."""
        self.scheduler.enqueue(task_id)

    async def loops_ended(self) -> None:
        """Wait until no settled task's loop still runs (it writes its last records, a
        turn's end, then ends by itself)."""
        await self.scheduler.settled_loops_ended()

    async def start_ready(self) -> None:
        """After a restart: act on every task waiting for its dependencies (they may have
        settled while the session was down), then start pending tasks as the limits
        allow."""
        await self.scheduler.check_waiting()
        self.scheduler.start_waiting()

    async def recover_calls(self) -> list[str]:
        """After a restart: the calls that ran in the background, each settled as
        interrupted (never run again); their task ids."""
        return await self.background.recover() if self.background is not None else []

    async def wind_down(self) -> None:
        """The host is done with the team: compactions asked for are dropped, and tasks
        that settled a moment ago write their last records (a turn's end), for up to 10
        seconds."""
        await self.compactor.abandon()
        with trio.move_on_after(10):
            await self.loops_ended()

    async def say(self, text: str, *, priority: Priority = "urgent") -> Mail:
        """A message from the user to the main agent while the session runs: `urgent`
        (the default) reaches it at its next step, or wakes it while it waits for its
        tasks; `interrupt` stops its model call in flight."""
        return await self.postbox.post(USER, MAIN, "", "instruction", text, priority=priority)

    async def answer(self, message_id: str, text: str) -> Mail:
        """The person's answer to an open question of a task (`Question.message_id`, or a
        `decision_required` / `blocked` mail): the task that asked reads it next. Raises
        `ValueError` for a message that is not an open question."""
        asked = self.state.mailbox.get(message_id)
        if asked is None or not asked.requires_ack or asked.answered_by:
            what = "unknown" if asked is None else "not an open question"
            raise ValueError(f"cannot answer {message_id}: {what}")
        return await self.postbox.post(
            USER, asked.sender, asked.task_id, "answer", text, in_reply_to=message_id
        )

    async def send(self, task_id: str, text: str, *, priority: Priority = "urgent") -> Mail:
        """A message from the person to a live task (an `instruction`), read at its agent's
        next step; `interrupt` also stops its model call in flight. The main agent is
        `say`'s. Raises `ValueError` for an unknown task or one that has settled."""
        task = self.state.tasks.get(task_id)
        if task is None:
            raise ValueError(f"no task {task_id!r} in this session")
        if task.kind == "tool":
            raise ValueError(f"task {task_id} is a call in the background: it reads no messages")
        if not task.live:
            raise ValueError(f"task {task_id} is {task.state}: its owner may revive it")
        return await self.postbox.post(
            USER, task_id, task_id, "instruction", text, priority=priority
        )

    async def change_todos(
        self, items: Sequence[TodoItem], said: str, *, replace: bool = False
    ) -> Mail:
        """The person's change to the main agent's todo list (items made by the pure
        functions of loop/todo_changes.py: `create`, `update`, `move`), journaled, and the main
        agent told what changed and what its list is now (read at its next step)."""
        await self.sink.emit(TodosChanged(agent=MAIN, replace=replace, items=tuple(items)))
        now = render(self.state.todo_list(MAIN))
        text = f"The person changed your todo list: {said}. Your list is now:\n{now}"
        return await self.postbox.post(USER, MAIN, "", "instruction", text, priority="notify")

    async def cancel(self, by: str, task_id: str, reason: str) -> list[str]:
        """Cancel a task and everything under it, deepest first."""
        return await self.scheduler.cancel(by, task_id, reason)

    async def compact(self, agent: str = MAIN) -> ContextCompacted | None:
        """Compact `agent`'s context by hand while the session runs, and return the
        checkpoint's record. It is done in the agent's own task at its next round boundary,
        where nothing else changes its context meanwhile: an agent waiting for mail or for
        its tasks compacts when it next takes a round. None: the team closed first.
        Raises `ValueError` for an agent with no context or whose task has settled, and
        `CompactionFailed` when even the compacted context would not fit its window (the
        agent goes on as it was)."""
        if agent not in self.state.agents:
            known = ", ".join(sorted(self.state.agents)) or "none yet"
            raise ValueError(f"no agent {agent!r} has a context in this session ({known})")
        task = self.state.tasks.get(agent)
        if task is not None and not task.live:
            raise ValueError(f"task {agent} is {task.state}: it takes no more rounds")
        return await self.compactor.ask(agent)

    async def watch_stalls(self) -> None:
        """Report each running task that made no progress for `stall_after` seconds. It runs
        as long as the team (`open_team` starts and ends it)."""
        await watch_stalls(self.session, self.postbox, self.seat.limits.stall_after)

    def close(self) -> None:
        """The team ends (`open_team` closes it): no agent takes another round, so the
        compactions still asked for are not made (`compact` returns None)."""
        self.compactor.close()


TeamHook = Callable[[Team], Awaitable[None] | None]
"""`RunSettings.on_team`: a function of the running team, plain or async."""
