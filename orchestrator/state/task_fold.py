"""The fold of the task records (state/tasks.py): how `task_created`, `task_changed` and
`task_usage` change the registry (`TASK_FOLDS`), live and on resume alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestrator.eventbase import FoldError
from orchestrator.state.tasks import (
    SETTLED,
    Registry,
    TaskChanged,
    TaskCreated,
    TaskRecord,
    TaskUsed,
)


def _created(registry: Registry, seq: int, record: TaskCreated) -> None:
    if record.task in registry.tasks:
        raise FoldError(f"task {record.task} was already created")
    registry.add(
        TaskRecord(
            task_id=record.task,
            owner=record.agent,
            owner_task=record.owner_task,
            depth=record.depth,
            agent_type=record.agent_type,
            description=record.description,
            plan_ref=record.plan_ref,
            write_scope=list(record.write_scope) if record.write_scope is not None else None,
            resume=record.resume,
            created=record.at,
            updated=record.at,
            created_seq=seq,
            created_by=record.ref,
            deadline=record.deadline,
            round_budget=record.round_budget,
            token_budget=record.token_budget,
            after=list(record.after),
            after_plan=list(record.after_plan),
            serialise=record.serialise,
            state=record.state,
            kind=record.task_kind,
            output=record.output,
        )
    )


def _changed(registry: Registry, seq: int, record: TaskChanged) -> None:
    task = registry.tasks.get(record.task)
    if task is None:
        raise FoldError(f"no task {record.task!r} was created")
    again = record.state in ("pending", "waiting_deps")
    if again and task.state in ("failed", "cancelled"):
        task.attempts += 1  # a retry of a failed or cancelled task is a new attempt
    # A revival: back to `pending` or `waiting_deps` from a settled state, or to `running`
    # (not the start of a task that waited for its dependencies).
    if (record.state == "pending" and task.state != "waiting_deps") or (
        record.state in ("running", "waiting_deps") and task.state in SETTLED
    ):
        task.revived_seq = seq
    task.state = record.state
    if record.instance:
        task.instances.append(record.instance)
    if record.ran_on is not None:
        task.ran_on = record.ran_on
    task.reason = record.reason if record.state != "running" else ""
    task.dependency = record.dependency
    task.updated = record.at or task.updated
    task.changed_seq = seq
    registry.changed(task)


def _used(registry: Registry, seq: int, record: TaskUsed) -> None:
    task = registry.get(record.task)
    if task is None:
        raise FoldError(f"task_usage of unknown task {record.task}")
    task.remote_seq = max(task.remote_seq, record.upto)


TASK_FOLDS: dict[type, Callable[[Registry, int, Any], None]] = {
    TaskCreated: _created,
    TaskChanged: _changed,
    TaskUsed: _used,
}
"""How each task record changes the registry (the mailbox's messages about a task update
its progress and completion: see `mailbox.py`)."""
