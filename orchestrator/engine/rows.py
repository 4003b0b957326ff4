"""How a worker adds its tasks' records to the engine's tables (`Store.append`,
`Store.append_all`): in one statement on Postgres, a row each on SQLite, each task's head
moved (or made, for its first records). Within a transaction the caller holds."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from orchestrator.engine.tables import HEADS, RECORDS

Lines = Sequence[tuple[int, bytes]]  # a journal's records: (seq, line)

# Made once (their SQL is compiled once per dialect and cached by SQLAlchemy).
_ADD_RECORDS = RECORDS.insert()
# On Postgres, a batch of records (of one task or several) in one statement.
_ADD_RECORDS_PG = sa.text(
    "INSERT INTO orchestrator_task_records (task, seq, line) SELECT t, s, l FROM unnest("
    "CAST(:tasks AS varchar[]), CAST(:seqs AS integer[]), CAST(:lines AS bytea[])) AS u(t, s, l)"
)
_MOVE_HEAD = (
    HEADS.update().where(HEADS.c.task == sa.bindparam("key")).values(last_seq=sa.bindparam("last"))
)


def add_records(db: sa.Connection, journals: Sequence[tuple[str, Lines]]) -> None:
    """The journals' records added (on Postgres in one statement: an executemany is one
    a record) and their heads moved (made, for a task's first records)."""
    rows = [(t, seq, line) for t, lines in journals for seq, line in lines]
    if not rows:
        return
    if db.dialect.name == "sqlite":
        db.execute(_ADD_RECORDS, [{"task": t, "seq": q, "line": b} for t, q, b in rows])
    else:
        tasks, seqs, texts = (list(column) for column in zip(*rows, strict=True))
        db.execute(_ADD_RECORDS_PG, {"tasks": tasks, "seqs": seqs, "lines": texts})
    heads = {t: lines[-1][0] for t, lines in journals if lines}
    moves = [{"key": t, "last": last} for t, last in heads.items()]
    counted = db.dialect.supports_sane_multi_rowcount  # (the rows each update moved)
    if counted and db.execute(_MOVE_HEAD, moves).rowcount == len(moves):
        return
    for t, last in heads.items():
        if not db.execute(_MOVE_HEAD, {"key": t, "last": last}).rowcount:
            db.execute(HEADS.insert().values(task=t, session=t.rsplit("/", 1)[0], last_seq=last))
