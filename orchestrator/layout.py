"""The names of the files in a session directory (docs/session-format.md). Imports
nothing, so that even the lightest command can use them."""

MANIFEST = "session.json"
JOURNAL = "journal.jsonl"
SNAPSHOT = "snapshot.json"
LOCK = "lock"
TASKS_DIR = "tasks"  # tasks/<id>.json: views of the task records (resume never reads them)
TODOS_DIR = "todos"  # todos/<agent>.json: views of the todo lists (resume never reads them)
