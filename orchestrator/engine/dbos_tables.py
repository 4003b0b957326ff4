"""What the engine reads of DBOS's own tables, in its own statements: DBOS's API has no
call for either, and asking for each workflow one at a time costs a round trip each.
Read as the pinned dbos 3.4 makes them, in its schema `dbos` on Postgres (a DBOS that
changes them changes these). The workflows asked of travel as one parameter (an array
on Postgres, JSON on SQLite): a list of a thousand bound one by one cost a worker 3 ms
of CPU a look."""

from __future__ import annotations

import orjson
import sqlalchemy as sa

# The workflows, among some, that DBOS holds unconsumed mail for on a topic: its table
# of messages (`DBOS.send`; engine/mail_watch.py).
_MAILED = (
    "SELECT DISTINCT destination_uuid FROM {schema}notifications "
    "WHERE destination_uuid {among} AND topic = :topic AND NOT consumed"
)
# How many messages each of some workflows received (`DBOS.recv`), by its record of
# operations: a workflow run again replays those first (engine/workflow.py).
_RECEIVED = (
    "SELECT workflow_uuid, count(*) FROM {schema}operation_outputs "
    "WHERE workflow_uuid {among} AND function_name = 'DBOS.recv' GROUP BY workflow_uuid"
)
_AMONG = {
    "sqlite": "IN (SELECT value FROM json_each(:workflows))",
    "postgresql": "= ANY(CAST(:workflows AS text[]))",
}


class DbosTables:
    """The two statements, for a database on SQLite (`sqlite`) or on Postgres."""

    def __init__(self, *, sqlite: bool) -> None:
        words = {
            "schema": "" if sqlite else "dbos.",
            "among": _AMONG["sqlite" if sqlite else "postgresql"],
        }
        self._mailed = sa.text(_MAILED.format(**words))
        self._received = sa.text(_RECEIVED.format(**words))
        self._sqlite = sqlite

    def mailed(self, db: sa.Connection, workflow_ids: list[str], topic: str) -> set[str]:
        """Those of `workflow_ids` that DBOS holds unconsumed messages on `topic` for."""
        rows = db.execute(self._mailed, {"workflows": self._among(workflow_ids), "topic": topic})
        return {workflow_id for (workflow_id,) in rows}

    def received(self, db: sa.Connection, workflow_ids: list[str]) -> dict[str, int]:
        """How many messages DBOS recorded each of `workflow_ids` receiving (none: left
        out)."""
        rows = db.execute(self._received, {"workflows": self._among(workflow_ids)})
        return {workflow_id: int(count) for workflow_id, count in rows}

    def _among(self, workflow_ids: list[str]) -> list[str] | str:
        return orjson.dumps(workflow_ids).decode() if self._sqlite else workflow_ids
