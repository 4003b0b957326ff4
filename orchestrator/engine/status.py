"""What the dbos engine's database says is going on (`orchestrator engine status`): the
workers, when each last beat, and the tasks of each session, queued or running and where.

Read with DBOS's client (its workflows on the queue, without launching DBOS here) and the
engine's own tables (the workers' beats, each run's task); blocking, as the store is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from orchestrator.engine.store import Store, Worker
from orchestrator.engine.workflow import QUEUE
from orchestrator.state.tasks import now_ms

ALIVE_MS = 60_000
"""A worker silent longer than this is shown as silent (engine/remote.py's `ALIVE`)."""


@dataclass(frozen=True)
class QueuedTask:
    """A task's workflow on the queue: `state` `queued` (waiting for a worker) or
    `running` (taken, by `worker`), since `since_ms`."""

    session: str
    task: str
    state: str
    worker: str
    since_ms: int


@dataclass
class EngineStatus:
    workers: list[Worker] = field(default_factory=list)
    tasks: list[QueuedTask] = field(default_factory=list)
    now_ms: int = 0

    def by_session(self) -> dict[str, list[QueuedTask]]:
        sessions: dict[str, list[QueuedTask]] = {}
        for task in self.tasks:
            sessions.setdefault(task.session, []).append(task)
        return sessions

    def as_json(self) -> dict[str, Any]:
        return {
            "workers": [
                {
                    "worker": w.worker_id,
                    "host": w.host,
                    "pid": w.pid,
                    "version": w.version,
                    "beat_seconds_ago": round((self.now_ms - w.beat_ms) / 1000, 1),
                    "state": worker_state(w, self.now_ms),
                }
                for w in self.workers
            ],
            "sessions": {
                session: {
                    "queued": sum(t.state == "queued" for t in tasks),
                    "running": sum(t.state == "running" for t in tasks),
                    "tasks": [
                        {
                            "task": t.task,
                            "state": t.state,
                            "worker": t.worker or None,
                            "seconds": round((self.now_ms - t.since_ms) / 1000, 1),
                        }
                        for t in tasks
                    ],
                }
                for session, tasks in self.by_session().items()
            },
        }


def worker_state(worker: Worker, now: int) -> str:
    """`stopped` (it said so, or another found it silent), `silent` or `alive`."""
    if worker.stopped:
        return "stopped"
    return "silent" if now - worker.beat_ms > ALIVE_MS else "alive"


def engine_status(url: str) -> EngineStatus:
    """The engine's status in the database at `url`: empty while nothing has made the
    engine's tables there yet (no session on the engine, no worker)."""
    try:
        return _status(url)
    except SQLAlchemyError as exc:
        said = str(exc).splitlines()[0] if str(exc) else ""
        if "no such table" in said or ("does not exist" in said and "relation" in said):
            return EngineStatus(now_ms=now_ms())
        raise


def _status(url: str) -> EngineStatus:
    from dbos import DBOSClient

    store = Store(url, reader=True)
    client = DBOSClient(system_database_url=url)
    try:
        workers = store.workers()
        workflows = client.list_workflows(
            queue_name=QUEUE,
            status=["ENQUEUED", "PENDING"],
            load_input=False,
            load_output=False,
        )
        tasks = []
        for workflow in workflows:
            run = store.run(workflow.workflow_id)
            key = run.task if run is not None else workflow.workflow_id
            session, _, task = key.rpartition("/")
            running = workflow.status == "PENDING"
            since = (workflow.updated_at if running else workflow.created_at) or 0
            tasks.append(
                QueuedTask(
                    session=session or "?",
                    task=task,
                    state="running" if running else "queued",
                    worker=(workflow.executor_id or "") if running else "",
                    since_ms=int(since),
                )
            )
    finally:
        client.destroy()
        store.close()
    tasks.sort(key=lambda t: (t.session, t.task))
    return EngineStatus(workers=workers, tasks=tasks, now_ms=now_ms())
