"""A subagent: a turn loop with its own context, working one task, and the runner that
runs subagents (in-process, on trio, each in its own cancel scope).

The loop is a function of the folded state, so a subagent revived after a crash, or after
its task had finished, goes on from its context as the journal left it.
"""

from __future__ import annotations

import trio

from orchestrator.agent import run_turn, settle_pending_calls
from orchestrator.errors import ModelError
from orchestrator.state.mailbox import Priority
from orchestrator.state.tasks import SETTLED, RanOn, TaskRecord, now_ms
from orchestrator.team import queries
from orchestrator.team.port import TaskPort


async def run_task(port: TaskPort, task_id: str, *, where: RanOn | None = None) -> None:
    """Work task `task_id` until it settles: completed, failed or cancelled. Each run it
    starts (a new instance) is journaled as running `where` (None: this process)."""
    where = where or RanOn.here()
    definition = port.turns.definition(task_id)
    context = port.state.agents[task_id]
    deps = port.turns.turn_deps(task_id)
    await _begin(port, task_id, where)
    while True:
        task = queries.task(port.state, task_id)
        if task.state in SETTLED:
            if task.state == "completed" and queries.mail_from_owner(port.state, task_id):
                # Its owner wrote while its last call (complete) ran: act on that too.
                await port.tasks.set_state(
                    task_id, "running", by=task_id, instance=_next(task), ran_on=where
                )
                continue
            return
        if task.state == "waiting_deps":
            # Revived while its last turn ended, with a dependency not done: the scheduler
            # starts it again once they are.
            return
        if task.state in ("waiting_decision", "waiting_children"):
            # Parked without holding a call open: the owner's answer (or a child's news)
            # starts the next turn.
            floor: Priority = "notify" if task.state == "waiting_decision" else "urgent"
            await port.mail.wait_for_mail(task_id, at_least=floor)
            await port.tasks.set_state(task_id, "running", by=task_id)
            continue
        await port.mail.deliver(task_id)
        if port.oversight.turn_over(task_id):
            await port.turns.end_open_turn(task_id, "completed")
            verdict = await port.oversight.assess(
                task_id, max_continues=definition.max_continues, must_report=True
            )
            reasons = "; ".join(verdict.reasons)
            if verdict.action == "await_tasks":
                await port.tasks.set_state(
                    task_id, "waiting_children", by=task_id, reason="waits for its own tasks"
                )
                continue
            if verdict.action == "blocked":
                await _blocked(port, task_id, reasons)
                continue
            if verdict.action != "continue_from_context":
                await fail(port, task_id, reasons, retry=verdict.action != "budget_exhausted")
                return
        outcome = await run_turn(context, deps)
        if outcome.stopped:  # a budget (the task's, or the session's) is spent
            await fail(port, task_id, outcome.stopped, retry=False)
            return
        if outcome.reason == "max_rounds":
            await fail(port, task_id, f"reached its limit of {outcome.rounds} rounds in one turn")
            return


async def _blocked(port: TaskPort, task_id: str, reasons: str) -> None:
    """The assessment found the task stuck (a loop, no progress, its todos waiting on
    failed work): its owner is told, as if it had reported itself blocked, and it waits
    for the answer."""
    task = queries.task(port.state, task_id)
    await port.mail.post(
        task_id,
        task.owner,
        task_id,
        "blocked",
        f"the task is stuck: {reasons}",
        data={"category": "stalled"},
        requires_ack=True,
    )
    await port.tasks.set_state(task_id, "waiting_decision", by=task_id, reason=reasons)


async def _begin(port: TaskPort, task_id: str, where: RanOn) -> None:
    """A new instance of the task (a start, a revival, a restart), running `where`, and
    the calls its last reply left without a result settled."""
    task = queries.task(port.state, task_id)
    if task.state == "pending":
        await port.tasks.set_state(
            task_id, "running", by=task_id, instance=_next(task), ran_on=where
        )
    elif port.tasks.take_resumed(task_id):
        # Running again in a new process (after a restart): a new instance, same context.
        await port.tasks.set_state(
            task_id,
            task.state,
            by=task_id,
            reason=task.reason,
            instance=_next(task),
            ran_on=where,
        )
    ended = await settle_pending_calls(port.state.agents[task_id], port.turns.turn_deps(task_id))
    if ended or queries.repeating(port.state, task_id):
        # A call cut off by the crash ended the turn when it ran again (ask_decision).
        await port.turns.end_open_turn(task_id, "yielded")


def _next(task: TaskRecord) -> str:
    """The id of the task's next instance: `t3.1`, `t3.2`, ..."""
    return f"{task.task_id}.{len(task.instances) + 1}"


async def fail(port: TaskPort, task_id: str, reason: str, *, retry: bool = True) -> None:
    """Mark the task failed and tell its owner, urgently; when its type allows retries
    and some are left (and `retry`: not for a spent budget or deadline), start its next
    attempt over the same context."""
    task = queries.task(port.state, task_id)
    retries = port.turns.definition(task_id).retries
    again = retry and task.attempts <= retries
    with trio.CancelScope(shield=True):
        await port.turns.end_open_turn(task_id, "failed")
        await port.tasks.set_state(task_id, "failed", by=task_id, reason=reason)
        note = f"; retrying (attempt {task.attempts + 1} of {retries + 1})" if again else ""
        await port.mail.post(
            task_id, task.owner, task_id, "risk_alert", f"task failed: {reason}{note}"
        )
        if again:
            context = port.state.agents[task_id]
            if not context.open_calls:
                await port.turns.nudge(
                    task_id,
                    f"Your previous attempt failed: {reason}. This is attempt "
                    f"{task.attempts + 1} of {retries + 1}: go on from where you are.",
                )
            await port.tasks.revive(task_id, by=task_id)


async def _within_deadline(port: TaskPort, task_id: str, where: RanOn | None) -> None:
    """`run_task`, failed when the task's deadline (wall time, kept across restarts)
    passes first."""
    deadline = queries.task(port.state, task_id).deadline
    if not deadline:
        await run_task(port, task_id, where=where)
        return
    with trio.move_on_after(max(0.0, (deadline - now_ms()) / 1000)) as timer:
        await run_task(port, task_id, where=where)
    if timer.cancelled_caught:
        await fail(port, task_id, "its deadline passed before it finished", retry=False)


async def work_task(
    port: TaskPort, task_id: str, scope: trio.CancelScope, *, where: RanOn | None = None
) -> None:
    """What a runner runs for a task: its loop within its deadline, in `scope` (the
    runner's handle to cancel it), a model's failure or a crash made the task's failure
    (a bug in one subagent must not end the session), a cancellation ending its turn.
    `where` is where the runner runs it (None: this process; see `Runner`)."""
    with scope:
        try:
            await _within_deadline(port, task_id, where)
        except ModelError as exc:
            await fail(port, task_id, port.turns.redact(f"model call failed: {exc}"))
        except Exception as exc:
            detail = port.turns.redact(f"{type(exc).__name__}: {exc}")
            await fail(port, task_id, f"crashed: {detail}")
    if scope.cancelled_caught:
        await port.turns.end_open_turn(task_id, "cancelled")


class InProcessRunner:
    """Runs each task's loop in one nursery, each in its own cancel scope, in this
    process (its `where`: the host and process, and no worker but on a worker of the
    dbos engine, engine/worker.py)."""

    def __init__(self, nursery: trio.Nursery, *, where: RanOn | None = None) -> None:
        self._nursery = nursery
        self._scopes: dict[str, trio.CancelScope] = {}
        self.where = where or RanOn.here()

    def start(self, task_id: str, port: TaskPort) -> None:
        scope = trio.CancelScope()
        self._scopes[task_id] = scope
        self._nursery.start_soon(self._run, port, task_id, scope, name=f"task {task_id}")

    def cancel(self, task_id: str) -> None:
        scope = self._scopes.get(task_id)
        if scope is not None:
            scope.cancel()

    async def _run(self, port: TaskPort, task_id: str, scope: trio.CancelScope) -> None:
        try:
            await work_task(port, task_id, scope, where=self.where)
        finally:
            if self._scopes.get(task_id) is scope:
                del self._scopes[task_id]
            # (A task it left failed or cancelled settles the tasks waiting for it here:
            # cut off by the team's end, that is done on resume.)
            await port.tasks.task_ended(task_id)
