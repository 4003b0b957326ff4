"""The report of a session as text: what `orchestrator sessions show ID` prints and
`SessionReport.text()` returns, made of the report's plain data (`session/report.py`), so
that the text and `--json` say the same. Whatever a model or a tool wrote is shown
through `text.visible` / `label`: nothing in it can act on a terminal."""

from __future__ import annotations

import time
from typing import Any

import orjson

from orchestrator.session.ledger import usage_table
from orchestrator.text import abbreviate, label, visible


def report_text(info: dict[str, Any]) -> str:
    """The whole report, one line per line, ending in a newline."""
    lines = [
        f"session   {info['id']}",
        f"goal      {visible(info['goal'])}",
        f"status    {info['status']}",
    ]
    if info["reason"]:
        lines.append(f"reason    {visible(info['reason'])}")
    lines += [
        f"model     {info['model']}",
        f"workspace {info['workspace']}",
        f"created   {info['created']}  updated {info['updated']}",
        f"journal   {info['journal_records']} records",
        f"settings  {settings_line(info['settings'])}",
    ]
    lines += [line.replace("execute ID", f"execute {info['id']}") for line in plan_lines(info)]
    lines.append("agents")
    for agent_id, agent in info["agents"].items():
        usage = agent["usage"]
        lines.append(
            f"  {agent_id} ({agent['role']}): {agent['messages']} messages, "
            f"{agent['model_calls']} model calls, {usage['input_tokens']} in / "
            f"{usage['output_tokens']} out tokens"
        )
        lines.append(f"    {context_line(agent)}")
    if info["tasks"]:
        lines.append("tasks")
        lines += [f"  {visible(line)}" for line in task_tree(info["tasks"])]
    lines += mailbox_lines(info["mailbox"])
    lines += todo_lines(info["todos"])
    lines += assessment_lines(info["assessments"])
    lines += compaction_lines(info["compactions"])
    lines.append("usage")
    lines += [f"  {line}" for line in usage_table(info["usage"]).splitlines()]
    lines.append("last events")
    lines += [
        f"  {event['seq']:>6}  {event['agent']:<12} {event['kind']}"
        for event in info["last_events"]
    ]
    lines += [f"warning: {visible(warning)}" for warning in info["warnings"]]
    return "\n".join(lines) + "\n"


def task_tree(tasks: list[dict[str, Any]]) -> list[str]:
    """The delegated tasks as an indented tree: state, type, description, latest
    progress and how long each ran (or has been running)."""
    children: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        children.setdefault(task["owner"], []).append(task)
    lines: list[str] = []

    def walk(owner: str, depth: int) -> None:
        for task in children.get(owner, []):
            live = task["state"] not in ("completed", "failed", "cancelled")
            end = time.time() * 1000 if live else task["updated"]
            elapsed = max(0.0, (end - task["created"]) / 1000) if task["created"] else 0.0
            took = f"{elapsed:.1f} s" if elapsed < 10 else f"{elapsed:.0f} s"
            line = (
                f"{'  ' * depth}{task['task_id']} [{task['state']}] {task['agent_type']}: "
                f"{label(task['description'], 50)} ({took})"
            )
            latest = task["progress"]
            if task["state"] == "completed" and task["completion"]:
                latest = task["completion"]["summary"]
            if latest:
                line += f" · {abbreviate(latest, 60)}"
            if task["reason"] and task["state"] != "completed":
                line += f" · {abbreviate(task['reason'], 60)}"
            elif task["state"] == "waiting_deps":
                deps = [*task.get("after", ()), *task.get("after_plan", ())]
                line += f" · waits for {abbreviate(', '.join(deps), 60)}"
            lines.append(line)
            walk(task["task_id"], depth + 1)

    walk("main", 0)
    return lines


def plan_lines(info: dict[str, Any]) -> list[str]:
    """The plan (none without one): its versions and decisions, then the plan being
    built, task by task, with the task delegated for each, its state and its todo's
    status (`session/report.plan_report`'s value)."""
    plan = info["plan"]
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


def mailbox_lines(mailbox: list[dict[str, Any]]) -> list[str]:
    if not mailbox:
        return []
    lines = ["mailbox"]
    for mail in mailbox:
        delivered = (
            f"delivered at {mail['delivered_seq']}" if mail["delivered_seq"] else "undelivered"
        )
        lines.append(
            f"  {mail['message_id']:>4} {mail['posted_seq']:>6} {mail['kind']:<24} "
            f"{mail['sender']} -> {mail['recipient']} ({mail['priority']}, {delivered}): "
            f"{visible(abbreviate(mail['summary'], 60))}"
        )
    return lines


def context_line(agent: dict[str, Any]) -> str:
    """`context 4,120 tokens (82% of 5,000 usable), 2 compactions`, and the breaker when
    it pauses the automatic trigger."""
    line = f"context {agent['tokens']:,} tokens"
    if agent["window"] is not None:
        usable = agent["window"]["usable"]
        line += f" ({agent['window_share']:.0%} of {usable:,} usable)" if usable else ""
    count = agent["compactions"]
    if count:
        line += f", {count} compaction{'' if count == 1 else 's'}"
    breaker = agent["breaker"]
    if breaker["paused"]:
        line += (
            f"; automatic compaction paused until round {breaker['paused_until']} (its last "
            "compactions freed too little)"
        )
    return line


def settings_line(settings: dict[str, Any] | None) -> str:
    """The session's settings, as the values that differ from the defaults."""
    if settings is None:
        return "none journaled yet (the next run takes them from its config and flags)"
    from orchestrator.messages import plain
    from orchestrator.state.settings import SessionSettings

    defaults = plain(SessionSettings())
    changed = [
        f"{key} {visible(orjson.dumps(value).decode())}"
        for key, value in settings.items()
        if value != defaults.get(key)
    ]
    return "the defaults, but " + ", ".join(changed) if changed else "the defaults"


def todo_lines(lists: dict[str, dict[str, Any]]) -> list[str]:
    """Each agent's todo list: progress, then one line per item with its blockers."""
    if not lists:
        return []
    lines = ["todos"]
    for agent, todos in lists.items():
        done, total = todos["progress"]["completed"], todos["progress"]["total"]
        goal = f" · {visible(todos['goal'])}" if todos["goal"] else ""
        lines.append(f"  {agent}: Tasks {done}/{total}{goal}")
        for item in todos["items"]:
            mark = item["status"]
            if item["blocked"] and mark == "pending":
                mark = "blocked by " + ", ".join(item["blocked_by"])
            extra = item["result"] or item["failure"]
            extra = f": {visible(abbreviate(extra, 60))}" if extra else ""
            lines.append(f"    [{item['id']}] [{mark}] {visible(item['content'])}{extra}")
    return lines


def assessment_lines(assessments: list[dict[str, Any]]) -> list[str]:
    if not assessments:
        return []
    lines = ["assessments"]
    for a in assessments:
        why = visible("; ".join(a["reasons"]))
        lines.append(
            f"  {a['seq']:>6}  {a['agent']:<12} {a['action']}" + (f": {why}" if why else "")
        )
    return lines


def compaction_lines(compactions: list[dict[str, Any]]) -> list[str]:
    if not compactions:
        return []
    lines = ["compactions"]
    for c in compactions:
        dropped = f", {c['dropped']} dropped" if c["dropped"] else ""
        lines.append(
            f"  {c['seq']:>6}  {c['agent']:<12} {c['reason']:<8} {c['method']:<9} "
            f"{c['before']:,} → {c['after']:,} tokens, {c['pruned']} pruned{dropped}"
        )
    return lines
