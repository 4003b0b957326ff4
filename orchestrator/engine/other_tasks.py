"""What a task on a worker knows of the other tasks of its session: their write scopes
and the files they changed, read from their journals in the engine's database, wherever
they run (another worker, or this one, in a team of its own).

A task on a worker runs in a team of its own, which knows that task only; its shell
command's changes are found by comparing the shared workspace before and after it, so
without this it would take the other tasks' changes made meanwhile for its own
(team/writes.py). One `SessionTasks` serves every task of a session this worker runs;
each look reads only the records written since the last (one call to the database).
"""

from __future__ import annotations

import msgspec

from orchestrator.engine.retry import Patience
from orchestrator.engine.store import Store
from orchestrator.team.writes import OtherWrites

# A line's frame is `{"seq":N,"t":T,"k":KIND,...`: its kind is in its first bytes.
HEAD = 80
CREATED = b'"k":"task_created"'
RESULT = b'"k":"call_result"'
CHANGED = b'"changed":['


class _Created(msgspec.Struct):
    """What a `task_created` record says of the task's writes."""

    task: str
    write_scope: tuple[str, ...] | None = None


class _Result(msgspec.Struct):
    """What a `call_result` record says of the files its call changed, and when."""

    t: int  # the record's wall time, ms
    a: str  # the agent, which is its task
    changed: tuple[str, ...] = ()


_created = msgspec.json.Decoder(_Created).decode
_result = msgspec.json.Decoder(_Result).decode


class SessionTasks:
    """The tasks of session `session_id` as their journals in `store` say (the
    `OtherTasks` a worker's teams are given: team/writes.py)."""

    def __init__(self, store: Store, session_id: str, db: Patience) -> None:
        self._store = store
        self._session = session_id
        self._db = db
        self._read: dict[str, int] = {}  # task key -> the last seq read
        self._scopes: dict[str, tuple[str, ...]] = {}
        self._wrote: dict[str, dict[str, int]] = {}  # path -> task -> its latest change

    async def writes(self) -> OtherWrites:
        """The session's tasks' write scopes and changes, as their records say now."""
        rows = await self._db.call(self._store.session_tail, self._session, dict(self._read))
        for key, lines in rows.items():
            for _, line in lines:
                self._take(line)
            self._read[key] = max(self._read.get(key, 0), lines[-1][0])
        return OtherWrites(self._scopes, self._wrote)

    def _take(self, line: bytes) -> None:
        """What one record says of a task's writes (two looks at once may read it twice:
        taking it again changes nothing)."""
        head = line[:HEAD]
        if CREATED in head:
            created = _created(line)
            if created.write_scope:
                self._scopes[created.task] = created.write_scope
        elif RESULT in head and CHANGED in line:
            result = _result(line)
            for path in result.changed:
                wrote = self._wrote.setdefault(path.strip().removeprefix("./"), {})
                wrote[result.a] = max(wrote.get(result.a, 0), result.t)
