"""The plan, the builder's todo list and the task tree agree after every record: each
plan todo's status is the one its task's state maps to, in a real run of the demo (a
plan, an approval, tasks waiting on dependencies, a question, a block, a re-plan, an
acceptance failure, a crash and its resume)."""

from __future__ import annotations

from pathlib import Path

from orchestrator import SessionState
from orchestrator.layout import FORMAT_VERSION
from orchestrator.loop.plan_run import todo_status
from orchestrator.state import decode_record

RECORDED = Path(__file__).resolve().parents[2] / "sessions" / f"v{FORMAT_VERSION}-completed"


def disagreements(state: SessionState) -> list[str]:
    todos = state.todos.get("main")
    if todos is None:
        return []
    found = []
    for item in todos.items.values():
        if not item.plan_task:
            continue
        task = state.tasks.by_plan_ref(item.plan_task)
        expected = todo_status(task.state if task is not None else "")
        if item.status != expected:
            found.append(f"{item.id}: todo {item.status}, task {task and task.state}")
    version = state.plans.approved_version
    if version is not None and state.plans.seeded == version.version:
        approved = version.plan
        linked = sorted(i.id for i in todos.items.values() if i.plan_task)
        if linked != sorted(t.id for t in approved.tasks):
            found.append(f"plan todos {linked} are not the plan's tasks")
    return found


def test_plan_todos_and_tasks_agree_after_every_record() -> None:
    [directory] = [p for p in RECORDED.iterdir() if p.is_dir()]
    state = SessionState()
    kinds = set()
    lines = (directory / "journal.jsonl").read_bytes().splitlines()
    for seq, line in enumerate(lines, 1):
        record = decode_record(line)
        kinds.add(record.kind)
        state.apply(seq, record)
        assert disagreements(state) == [], (seq, record.kind)
    # The run went through every kind of transition this checks.
    assert {"plan_submitted", "plan_decided", "replan_requested", "task_changed"} <= kinds
    assert state.plans.seeded == 2
    assert {t.state for t in state.tasks.tasks.values()} == {"completed"}
