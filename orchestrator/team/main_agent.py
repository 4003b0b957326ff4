"""The main agent's event loop: it runs turns with the turn loop, owns the nursery its
subagents live in, and between turns sleeps until its mailbox wakes it.

Its inputs are the user's goal and messages, mailbox messages (task completions among
them) and timers, all through one inbox: the mailbox (`postbox.py`). It wires the parts
(team, runner, turn loop, definitions) and contains none of them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio

from orchestrator.agent import TurnDeps, run_turn, settle_pending_calls
from orchestrator.state.context import AgentContext
from orchestrator.state.events import EventSink
from orchestrator.state.mailbox import Mail
from orchestrator.state.tasks import SETTLED, TaskRecord
from orchestrator.team import queries
from orchestrator.team.asking import pending_requests
from orchestrator.team.parking import ParkWatch
from orchestrator.team.planning import hand_over, replan
from orchestrator.team.port import Runner, SessionLike
from orchestrator.team.queries import MAIN
from orchestrator.team.runtime import Team
from orchestrator.team.settings import RunSettings, Seat

MAX_REMINDERS = 3


@dataclass(frozen=True)
class MainOutcome:
    reason: str  # "completed", "blocked", "budget_exhausted", "max_rounds"
    detail: str = ""
    # Questions that park a task and that no agent will answer: the person's to answer.
    questions: tuple[Mail, ...] = ()


@asynccontextmanager
async def open_team(
    session: SessionLike,
    sink: EventSink,
    run: RunSettings,
    seat: Seat,
    *,
    runner: Callable[[trio.Nursery], Runner] | None = None,
    screen: EventSink | None = None,
) -> AsyncIterator[Team]:
    """A team whose subagents run in a nursery that lives as long as the block, on
    `runner` (None: the run's). An error of the block arrives bare, not grouped by the
    nursery (subagents catch their own).
    `screen` shows what is journaled elsewhere (a task on a worker's calls): the sinks
    of `sink` after the session's, without it (None: they are not shown)."""
    try:
        async with trio.open_nursery() as nursery:
            runs = (runner or run.runner)(nursery)
            team = Team(session, sink, run, seat, runs, nursery, screen=screen)
            nursery.start_soon(team.watch_stalls)
            nursery.start_soon(team.hooks.tell_in_order)
            try:
                yield team
                await team.wind_down()  # then whatever else is left is stopped
            finally:
                nursery.cancel_scope.cancel()
                team.close()
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise


async def run_main(team: Team) -> MainOutcome:
    """Run the main agent until the assessment of its turn end says it is done: completed
    (verified when verification is configured), blocked, or out of budget. It sleeps
    while it awaits its tasks or the user. The hooks are told as it starts and ends."""
    hooks = team.hooks
    resumed = team.state.agents[MAIN].steps > 0
    await hooks.tell("session_start", MAIN, {"resumed": resumed, "goal": team.seat.goal})
    outcome = await _run_main(team)
    await hooks.drained(TOLD_AT_END)  # (what it was told of before, first)
    await hooks.tell_questions(outcome.questions)  # (left to the person now)
    await hooks.tell("session_end", MAIN, {"status": outcome.reason, "detail": outcome.detail})
    return outcome


TOLD_AT_END = 30.0
"""Seconds the end waits for hooks told of events before it (each within its time-out)."""


async def _run_main(team: Team) -> MainOutcome:
    context = team.state.agents[MAIN]
    deps = team.turn_deps(MAIN)
    oversight = team.oversight
    await _begin(team, context, deps)
    reminders = 0  # sent since the main agent last had mail (`_await_tasks`)
    parking = ParkWatch(team.seat.limits.park_limit)
    while True:
        replanned = await _replan(team)
        if replanned is not None:
            return replanned
        if await team.port.mail.deliver(MAIN):
            reminders = 0
        if not oversight.turn_over(MAIN):
            stopped = await _turn(team, context, deps)
            if stopped is not None:
                return stopped
        await team.port.turns.end_open_turn(MAIN, "completed")
        # (A `stop` hook that sends the agent back puts its reason in its context.)
        if _before_assessing(team) or await team.hooks.stop(MAIN):
            continue
        verdict = await oversight.assess(MAIN)
        match verdict.action:
            case "continue_from_context":
                continue  # the note is in its context: the next turn starts from it
            case "verify":
                await oversight.verify(MAIN)  # passed: assessed again; failed: a new turn
            case "await_user":
                await team.port.mail.wait_for_mail(MAIN, at_least="notify")
            case "await_tasks":
                stuck, reminders = await _await_tasks(team, reminders, parking)
                if stuck is not None:
                    return stuck
            case action:
                return _ended(team, action, verdict.reasons)


def _before_assessing(team: Team) -> bool:
    """Whether something comes before the turn's assessment: the re-plan the builder
    asked for, or mail to deliver (and a turn to take on it) while no task runs."""
    state = team.state
    if state.plans.replanning is not None:
        return True
    return bool(state.mailbox.undelivered(MAIN)) and not queries.live_children(state, MAIN)


async def _replan(team: Team) -> MainOutcome | None:
    """Run a re-plan the builder asked for, and hand an approved version over; the
    outcome when a version waits for a decision nobody gives now. (First: a call of the
    main agent parked and still undecided after a resume waits on, and the run ends.)"""
    if team.state.approvals.of(MAIN):
        return _parked(team)
    if team.state.plans.replanning is None:
        return None
    outcome = await replan(team, team.run.approve_plan, goal=team.seat.goal)
    if outcome.state == "build":
        return None
    return MainOutcome("blocked", outcome.awaits)


async def _begin(team: Team, context: AgentContext, deps: TurnDeps) -> None:
    """Tasks first: a call of the main agent cut off by the crash (a wait_tasks, say) may
    need them running to finish; then the main agent's own open calls."""
    restarted = await resume_tasks(team)
    await hand_over(team)  # a version approved just before a crash, not handed over yet
    await settle_pending_calls(context, deps)
    if restarted:
        await team.port.turns.nudge(MAIN, restarted)


def _ended(team: Team, action: str, reasons: tuple[str, ...]) -> MainOutcome:
    """The session ends as the assessment says, with the questions no agent will answer;
    `completed` only when there are none (a task under an ended owner may still wait)."""
    questions = queries.unanswerable(team.state, main_idle=True)
    if action == "completed" and questions:
        return _unanswered(team, questions, "nobody is left to answer")
    return MainOutcome(action, "; ".join(reasons), tuple(questions))


def _unanswered(team: Team, questions: list[Mail], why: str) -> MainOutcome:
    """The session stops blocked on questions no agent answers: the person's now."""
    lines = "; ".join(queries.describe_question(team.state, m) for m in questions)
    return MainOutcome("blocked", f"{why}: {lines}", tuple(questions))


async def _turn(team: Team, context: AgentContext, deps: TurnDeps) -> MainOutcome | None:
    """Run one turn of the main agent; what ends the session now, if anything."""
    outcome = await run_turn(context, deps)
    if outcome.parked:
        return _parked(team)
    if outcome.stopped:  # the session's budget is spent
        await team.port.turns.end_open_turn(MAIN, "failed")  # the assessment says why
        return None
    if outcome.reason == "max_rounds":
        return MainOutcome("max_rounds", f"stopped after {outcome.rounds} rounds")
    return None


def _parked(team: Team) -> MainOutcome:
    """The main agent's call waits for a person's decision (its approver answered
    `Later`): the run ends blocked now, its turn left open (tasks still running are
    stopped, as at any run's end, and go on when the session is resumed)."""
    lines = "; ".join(
        f"{r.id} ({r.tool}: {r.command if r.command is not None else r.call.arguments})"
        for r in pending_requests(team.state)
    )
    return MainOutcome("blocked", f"a call waits for a person's approval: {lines}")


async def _await_tasks(
    team: Team, reminders: int, parking: ParkWatch
) -> tuple[MainOutcome | None, int]:
    """Sleep until mail wakes the main agent; when every live task waits for its answer
    instead, remind it (at most `MAX_REMINDERS` times, then say why it is stuck). A task
    parked past `park_limit` with nobody to answer it ends the wait too. Returns the
    outcome that ends the session (or None), and the reminders sent so far."""
    state = team.state
    orphans = queries.orphans(state)
    live = queries.live_children(state, MAIN) + orphans
    waiting = [t for t in live if queries.waits_for(state, MAIN, t.task_id)]
    unanswerable = queries.unanswerable(state, main_idle=True)
    stuck = {m.sender for m in unanswerable if m.recipient != MAIN}
    going = [t for t in live if t not in waiting and t.task_id not in stuck]
    if going:
        return await _sleep(team, parking, orphans), reminders
    if not waiting:  # only tasks under ended owners, waiting for answers nobody will give
        return _unanswered(team, unanswerable, "nobody is left to answer"), reminders
    # Every live task waits for this agent: waiting for mail would never end.
    if reminders >= MAX_REMINDERS:
        questions = [m for m in team.state.mailbox.unanswered(MAIN) if m.kind in queries.PARKING]
        return _unanswered(team, questions, "the main agent did not answer"), reminders
    await team.port.turns.nudge(MAIN, _waiting_note(team, [t.task_id for t in waiting]))
    return None, reminders + 1


async def _sleep(team: Team, parking: ParkWatch, orphans: list[TaskRecord]) -> MainOutcome | None:
    """Sleep until urgent mail for the main agent, or until a task under an ended owner
    changes state (it reports to nobody who is running): None, to assess again. Looks
    again at every change meanwhile: a task parked past `park_limit` with nobody to answer
    it ends the session blocked."""
    watched = [(t.task_id, t.state) for t in orphans]
    while True:
        over, deadline = parking.look(team.state)
        if over:
            why = f"parked for {parking.limit:g} s with nobody to answer"
            return _unanswered(team, over, why)
        changed = team.changed
        with trio.move_on_at(deadline):
            async with trio.open_nursery() as nursery:

                async def first(wait: Callable[[], Awaitable[object]]) -> None:
                    await wait()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(
                    first, lambda: team.port.mail.wait_for_mail(MAIN, at_least="urgent")
                )
                if parking.limit or watched:
                    nursery.start_soon(first, changed.wait)
        if team.state.mailbox.undelivered(MAIN, at_least="urgent"):
            return None
        now = [(t.task_id, t.state) for t in map(team.state.tasks.get, dict(watched)) if t]
        if now != watched:
            return None


async def close_settled(team: Team, task_id: str) -> None:
    """A task that settled with its last call cut off by the crash (its `complete` was
    journaled, the call's result was not): give the call its result and end the turn, so
    its context is whole (the re-run finds its report made and changes nothing)."""
    context = team.state.agents.get(task_id)
    if context is None or not (context.open_calls or context.turn_open):
        return
    await settle_pending_calls(context, team.turn_deps(task_id))
    await team.port.turns.end_open_turn(task_id, "yielded")


async def _asked(team: Team, task: TaskRecord) -> bool:
    """For a task whose resume policy is `ask`: the person's answer, or no when there is
    nobody to ask."""
    ask = team.run.ask_resume
    if ask is None:
        return False
    question = (
        f"task {task.task_id} ({task.agent_type}: {task.description}) was {task.state} when "
        "the session stopped; revive it?"
    )
    return await ask(question)


def _waiting_note(team: Team, task_ids: list[str]) -> str:
    state = team.state
    asked = [m for m in state.mailbox.unanswered(MAIN) if m.task_id in task_ids]
    stuck = [(t, queries.undelegated(state, queries.task(state, t))) for t in task_ids]
    lines = []
    if asked or not stuck:
        lines.append("These tasks are waiting for you and cannot go on until you answer:")
        lines += [f"- task {m.task_id}, message {m.message_id}: {m.summary}" for m in asked]
        lines.append(
            "Answer each with send_message(task=..., kind='answer', in_reply_to=..., "
            "text=...), or cancel_task it."
        )
    if any(refs for _, refs in stuck):
        lines.append("These tasks wait for plan tasks nobody has delegated:")
        lines += [f"- task {t}: {', '.join(refs)}" for t, refs in stuck if refs]
        lines.append("Delegate each (delegate with its plan_ref), or cancel_task the task.")
    return "\n".join(lines)


async def resume_tasks(team: Team) -> str:
    """After a restart: run again the tasks that were live (as their resume policy says).
    Returns the one message that tells the main agent what became of its tasks ("" when
    there were none live)."""
    revived, stopped, waiting = [], [], []
    # Calls that were running in the background: interrupted, never run again.
    interrupted = await team.recover_calls()
    for task in list(team.state.tasks.tasks.values()):
        if task.kind == "tool":
            continue
        if task.state in SETTLED:
            await close_settled(team, task.task_id)
            continue
        if team.is_running(task.task_id):
            continue
        if task.state in ("pending", "waiting_deps"):
            continue  # queued, or waiting: started below, as the limit and their deps allow
        if task.resume == "auto" or (task.resume == "ask" and await _asked(team, task)):
            if queries.waits_for(team.state, MAIN, task.task_id):
                waiting.append(task.task_id)
            else:
                revived.append(task.task_id)
            team.restart(task.task_id)
        else:
            why = (
                "it was not to be revived"
                if task.resume == "ask"
                else "its resume policy is 'never'"
            )
            reason = f"interrupted by a restart ({why}): send it a message to go on"
            await team.port.tasks.set_state(task.task_id, "cancelled", by=MAIN, reason=reason)
            stopped.append(task.task_id)
    # Dependencies may have settled while the session was down (or just before it
    # stopped): the tasks waiting for them start now, or are cancelled.
    await team.start_ready()
    return _restart_note(team, revived, waiting, stopped, interrupted)


def _restart_note(
    team: Team,
    revived: list[str],
    waiting: list[str],
    stopped: list[str],
    interrupted: list[str],
) -> str:
    deps = [t.task_id for t in team.state.tasks.waiting()]
    if not (revived or stopped or waiting or deps or interrupted):
        return ""
    finished = sorted(
        {m.task_id for m in team.state.mailbox.undelivered(MAIN) if m.kind == "completed"}
    )
    lines = ["The session was restarted."]
    if revived:
        lines.append("Revived and running again: " + ", ".join(revived) + ".")
    if waiting:
        lines.append("Waiting for your answer: " + ", ".join(waiting) + ".")
    if stopped:
        lines.append("Not revived (their resume policy): " + ", ".join(stopped) + ".")
    if deps:
        lines.append("Waiting for their dependencies: " + ", ".join(deps) + ".")
    if interrupted:
        lines.append(
            "Calls in the background interrupted, and not run again (their owners are told, "
            "with their output so far): " + ", ".join(interrupted) + "."
        )
    if finished:
        lines.append("Finished while it was down: " + ", ".join(finished) + ".")
    return " ".join(lines)
