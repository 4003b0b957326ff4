"""The engine's own tables in its database, beside DBOS's (engine/store.py reads and
writes them; docs/engine.md): each remote task's journal (`RECORDS`) and its last seq
(`HEADS`), its runs, the approvals its calls wait for, the workers' heartbeats, and the
engine's own facts (`META`: the tables' format)."""

from __future__ import annotations

import sqlalchemy as sa

ENGINE_FORMAT = 1
"""The layout of the engine's tables. A database written by a newer orchestrator (a
larger format) is refused by this one's workers (`check_format`), rather than misread."""

METADATA = sa.MetaData()

RECORDS = sa.Table(
    "orchestrator_task_records",
    METADATA,
    sa.Column("task", sa.String(300), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("line", sa.LargeBinary, nullable=False),
)
HEADS = sa.Table(
    "orchestrator_task_heads",
    METADATA,
    sa.Column("task", sa.String(300), primary_key=True),
    sa.Column("session", sa.String(100), nullable=False, index=True),
    sa.Column("last_seq", sa.Integer, nullable=False),
)
"""The last seq of each task's journal, written with its records: a session looks here
(one small query for all its tasks) before it reads any task's new records."""
RUNS = sa.Table(
    "orchestrator_task_runs",
    METADATA,
    sa.Column("workflow_id", sa.String(300), primary_key=True),
    sa.Column("task", sa.String(300), nullable=False),
    sa.Column("version", sa.String(50), nullable=False),
    sa.Column("workspace", sa.Text, nullable=False),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("cancelled", sa.Boolean, nullable=False, default=False),
)
APPROVALS = sa.Table(
    "orchestrator_approvals",
    METADATA,
    sa.Column("id", sa.String(400), primary_key=True),  # `<task key>:<call id>`
    sa.Column("session", sa.String(100), nullable=False, index=True),
    sa.Column("task", sa.String(300), nullable=False),
    sa.Column("request", sa.LargeBinary, nullable=False),  # the call, as JSON
    sa.Column("answer", sa.LargeBinary, nullable=True),  # none until the session answers
    sa.Column("asked_ms", sa.BigInteger, nullable=False),
)
"""A task on a worker's calls that its permission rules ask about, put to its session,
which asks its own approver (the person) and writes the answer here."""
WORKERS = sa.Table(
    "orchestrator_workers",
    METADATA,
    sa.Column("worker_id", sa.String(200), primary_key=True),
    sa.Column("host", sa.String(200), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("version", sa.String(50), nullable=False),
    sa.Column("beat_ms", sa.BigInteger, nullable=False),
    sa.Column("stopped", sa.Boolean, nullable=False, default=False),
)


META = sa.Table(
    "orchestrator_engine_meta",
    METADATA,
    sa.Column("key", sa.String(50), primary_key=True),
    sa.Column("value", sa.String(200), nullable=False),
)
"""The engine's own facts about its database: its `format` (`ENGINE_FORMAT`)."""
