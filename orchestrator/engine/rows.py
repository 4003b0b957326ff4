"""How a worker adds its tasks' records to the engine's tables (`Store.append`,
`Store.append_all`): in one statement on Postgres, a row each on SQLite, each task's head
moved (or made, for its first records). And how a session reads the new records of the
tasks whose heads moved (`Store.session_tail`): in one statement, the seqs it has passed
in as one JSON parameter, so the database compares every head, not Python. Within a
transaction the caller holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import orjson
import sqlalchemy as sa

from orchestrator.engine.tables import RECORDS

Lines = Sequence[tuple[int, bytes]]  # a journal's records: (seq, line)

# Made once (their SQL is compiled once per dialect and cached by SQLAlchemy).
_ADD_RECORDS = RECORDS.insert()
# On Postgres, a batch of records (of one task or several) in one statement.
_ADD_RECORDS_PG = sa.text(
    "INSERT INTO orchestrator_task_records (task, seq, line) SELECT t, s, l FROM unnest("
    "CAST(:tasks AS varchar[]), CAST(:seqs AS integer[]), CAST(:lines AS bytea[])) AS u(t, s, l)"
)
# Each task's head moved to its last record, or made for its first: one statement on
# Postgres, one a task on SQLite (an upsert on both).
_MOVE_HEADS_PG = sa.text(
    "INSERT INTO orchestrator_task_heads (task, session, last_seq) SELECT t, s, l FROM unnest("
    "CAST(:tasks AS varchar[]), CAST(:sessions AS varchar[]), CAST(:lasts AS integer[]))"
    " AS u(t, s, l) ON CONFLICT (task) DO UPDATE SET last_seq = EXCLUDED.last_seq"
)
_MOVE_HEAD_SQLITE = sa.text(
    "INSERT INTO orchestrator_task_heads (task, session, last_seq) VALUES (:task, :session,"
    " :last) ON CONFLICT (task) DO UPDATE SET last_seq = excluded.last_seq"
)


def add_records(db: sa.Connection, journals: Sequence[tuple[str, Lines]]) -> None:
    """The journals' records added (on Postgres in one statement: an executemany is one
    a record) and their heads moved (made, for a task's first records)."""
    rows = [(t, seq, line) for t, lines in journals for seq, line in lines]
    if not rows:
        return
    heads = {t: lines[-1][0] for t, lines in journals if lines}
    if db.dialect.name == "sqlite":
        db.execute(_ADD_RECORDS, [{"task": t, "seq": q, "line": b} for t, q, b in rows])
        moves = [{"task": t, "session": _session(t), "last": n} for t, n in heads.items()]
        db.execute(_MOVE_HEAD_SQLITE, moves)
        return
    tasks, seqs, texts = (list(column) for column in zip(*rows, strict=True))
    db.execute(_ADD_RECORDS_PG, {"tasks": tasks, "seqs": seqs, "lines": texts})
    db.execute(
        _MOVE_HEADS_PG,
        {
            "tasks": list(heads),
            "sessions": [_session(t) for t in heads],
            "lasts": list(heads.values()),
        },
    )


def _session(task: str) -> str:
    """The session of task `task` (`<session id>/<task id>`)."""
    return task.rsplit("/", 1)[0]


# The seqs a session has (`known`: a JSON object, task key to seq) as a relation.
_KNOWN = {
    "sqlite": "SELECT key AS task, value AS after FROM json_each(:known)",
    "postgresql": (
        "SELECT key AS task, CAST(value AS integer) AS after"
        " FROM jsonb_each_text(CAST(:known AS jsonb))"
    ),
}
# The known tasks whose heads moved past their seq (looked up by key: the known ones
# drive the join), and, unless only those are asked for, the session's other tasks.
_MOVED = (
    "SELECT h.task, k.after FROM known AS k JOIN orchestrator_task_heads AS h"
    " ON h.task = k.task WHERE h.session = :session AND h.last_seq > k.after"
)
_UNKNOWN = (
    " UNION ALL SELECT h.task, 0 FROM orchestrator_task_heads AS h"
    " WHERE h.session = :session AND h.task NOT IN (SELECT task FROM known)"
)
_TAIL = (
    "WITH known AS ({known}), moved AS ({moved}) SELECT r.task, r.seq, r.line"
    " FROM moved JOIN orchestrator_task_records AS r ON r.task = moved.task"
    " AND r.seq > moved.after ORDER BY r.task, r.seq"
)
_TAILS = {
    (dialect, named_only): sa.text(
        _TAIL.format(known=known, moved=_MOVED if named_only else _MOVED + _UNKNOWN)
    )
    for dialect, known in _KNOWN.items()
    for named_only in (False, True)
}


def new_records(
    db: sa.Connection, session: str, after: Mapping[str, int], *, named_only: bool
) -> dict[str, list[tuple[int, bytes]]]:
    """The records of `session`'s tasks past the seq `after` gives for each (all of a
    task it does not name, none with `named_only`), by task key, each in order."""
    query = _TAILS[db.dialect.name, named_only]
    found: dict[str, list[tuple[int, bytes]]] = {}
    for task, seq, line in db.execute(
        query, {"known": orjson.dumps(after).decode(), "session": session}
    ):
        found.setdefault(task, []).append((seq, bytes(line)))
    return found
