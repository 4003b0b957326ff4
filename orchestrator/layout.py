"""The names of the files in a session directory, and the versions of their formats
(docs/session-format.md). Imports nothing but `typing`, so that even the lightest command can
use them."""

from typing import Final

FORMAT_VERSION = 15
"""The session format (`session.json`'s `format_version`; see manifest.py)."""

SNAPSHOT_LAYOUT: Final = 4
"""What a `snapshot.json` holds (see state/fold.py). A snapshot of another layout (1: every
message whole, no `layout`; 2: no message counts; 3: written by pydantic, todo items and
usage with their defaults) is not read: resume replays the journal instead (a snapshot is
derived data)."""

MANIFEST = "session.json"
JOURNAL = "journal.jsonl"
SNAPSHOT = "snapshot.json"
LOCK = "lock"
TASKS_DIR = "tasks"  # tasks/<id>.json: views of the task records (resume never reads them)
TODOS_DIR = "todos"  # todos/<agent>.json: views of the todo lists (resume never reads them)
PLAN_JSON = "plan.json"  # the latest plan version, for programs (resume never reads it)
PLAN_MD = "plan.md"  # the same plan for people (docs/plans.md)
