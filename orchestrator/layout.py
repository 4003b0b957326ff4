"""The names of the files in a session directory, and the versions of their formats
(docs/session-format.md). Imports nothing, so that even the lightest command can use
them."""

FORMAT_VERSION = 5
"""The session format (`session.json`'s `format_version`; see manifest.py)."""

SNAPSHOT_LAYOUT = 3
"""What a `snapshot.json` holds (see state.py). A snapshot of another layout (1: every
message whole, no `layout`; 2: no message counts) is not read: resume replays the journal
instead (a snapshot is derived data)."""

MANIFEST = "session.json"
JOURNAL = "journal.jsonl"
SNAPSHOT = "snapshot.json"
LOCK = "lock"
TASKS_DIR = "tasks"  # tasks/<id>.json: views of the task records (resume never reads them)
TODOS_DIR = "todos"  # todos/<agent>.json: views of the todo lists (resume never reads them)
