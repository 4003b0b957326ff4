"""The plan in `sessions show`: its versions and decisions, then the plan being built,
task by task, with the task delegated for each, its state and its todo's status."""

from __future__ import annotations

from typing import Any

from orchestrator.text import label


def plan_lines(plan: dict[str, Any] | None) -> list[str]:
    """Lines for `session/report.plan_report`'s value (none without a plan)."""
    if plan is None:
        return []
    lines = [f"plan      v{plan['version']} {plan['decision']}: {label(plan['goal'], 100)}"]
    if plan["awaiting"] is not None and plan["awaiting"] != plan["version"]:
        lines.append(f"  v{plan['awaiting']} awaits approval (orchestrator execute ID --approve)")
    for version in plan["versions"]:
        by = f" by {label(version['by'], 40)}" if version["by"] else ""
        why = f": {label(version['feedback'], 100)}" if version["feedback"] else ""
        decision = version["decision"] or "awaiting approval"
        lines.append(
            f"  v{version['version']} ({version['source']}, {version['tasks']} tasks) "
            f"{decision}{by}{why}"
        )
    width = max(len(t["id"]) for t in plan["tasks"]) if plan["tasks"] else 0
    for task in plan["tasks"]:
        after = f" after {', '.join(task['depends_on'])}" if task["depends_on"] else ""
        delegated = f" as {task['task']}" if task["task"] else ""
        lines.append(
            f"  {label(task['id'], 40):<{width}} [{task['todo']}] {label(task['title'], 80)}"
            f"{after} — {task['state']}{delegated}"
        )
    return lines
