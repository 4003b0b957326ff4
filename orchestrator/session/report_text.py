"""The report of a session as text: what `orchestrator sessions show ID` prints and
`SessionReport.text()` returns, made of the report's plain data (`session/report.py`), so
that the text and `--json` say the same. Its notation (durations, costs, tables, the task
tree) is `session/shown.py`'s. Whatever a model or a tool wrote is shown through
`text.visible` / `label`: nothing in it can act on a terminal."""

from __future__ import annotations

from typing import Any

import orjson

from orchestrator.session.ledger import usage_table
from orchestrator.session.report_settings import (
    approval_line,
    engine_line,
    sandbox_line,
    settings_line,
    workers_line,
)
from orchestrator.session.runs import total
from orchestrator.session.shown import (
    NONE,
    TASK_HEADER,
    USAGE_HEADER,
    any_ran_on,
    duration,
    moment,
    one_line,
    table,
    task_rows,
    tokens,
    totals_cost,
    totals_tokens,
)
from orchestrator.text import block, label, visible

OUTPUT_LINES = 12
"""The lines of a failed verification's output shown (`--json` has it whole)."""


def report_json(info: dict[str, Any]) -> str:
    """What `orchestrator sessions show ID --json` prints of the report's data."""
    return orjson.dumps(info, option=orjson.OPT_INDENT_2).decode() + "\n"


def report_text(info: dict[str, Any], ref: str = "") -> str:
    """The whole report, one line per line, ending in a newline. `ref`: the session as
    the commands it prints name it (its id, with the command line's `--sessions-dir`)."""
    lines = header_lines(info)
    lines += [line.replace("execute ID", f"execute {info['id']}") for line in plan_lines(info)]
    lines += approval_lines(info, ref or info["id"])
    lines += agent_lines(info["agents"])
    lines += tree_lines(info)
    lines += mailbox_lines(info["mailbox"])
    lines += todo_lines(info["todos"])
    lines += verification_lines(info.get("verifications", []))
    lines += assessment_lines(info["assessments"])
    lines += compaction_lines(info["compactions"])
    lines += ["", "usage", *usage_table(info["usage"]).splitlines()]
    if info["last_events"]:
        rows = [[str(e["seq"]), label(e["agent"], 40), e["kind"]] for e in info["last_events"]]
        lines += ["", "last events", *table(("SEQ", "AGENT", "KIND"), rows, right={0})]
    if info["warnings"]:
        lines.append("")
        lines += [f"warning: {visible(warning)}" for warning in info["warnings"]]
    return "\n".join(lines) + "\n"


def header_lines(info: dict[str, Any]) -> list[str]:
    """Who the session is, what it spent and how long its journal ran."""
    session = info["usage"]["session"]
    spent = (
        f"{session['calls']} model call{'' if session['calls'] == 1 else 's'}, "
        f"{tokens(totals_tokens(session))} tokens, {totals_cost(session)}"
    )
    first, last = info.get("first_record_time"), info.get("last_record_time")
    records = f"{info['journal_records']} records"
    if first is not None and last is not None:
        records += f" over {duration(last - first)}"
    fields = [
        ("session", info["id"]),
        ("goal", visible(info["goal"])),
        ("status", info["status"]),
        ("reason", visible(info["reason"]) if info["reason"] else ""),
        ("output", one_line(info.get("output", ""), 200)),
        ("model", label(info["model"], 200)),
        ("workspace", label(info["workspace"], 200)),
        ("created", moment(info["created"])),
        ("updated", moment(info["updated"])),
        ("journal", records),
        ("spent", spent),
        ("settings", settings_line(info["settings"])),
        ("engine", engine_line(info["settings"])),
        ("sandbox", sandbox_line(info["settings"])),
        ("approval", approval_line(info["settings"])),
        ("on workers", workers_line(info.get("on_workers"))),
    ]
    return [f"{name:<10} {value}" for name, value in fields if value]


def approval_lines(info: dict[str, Any], ref: str) -> list[str]:
    """The calls parked for a person's decision (none: no lines): each one's id, whose
    it is and what it runs, and the commands that decide it."""
    parked = info.get("approvals") or []
    if not parked:
        return []
    rows = [
        [
            label(a["id"], 40),
            label(a["who"], 60),
            label(a["tool"], 40),
            label(a["command"] if a["command"] is not None else a["arguments"], 200),
        ]
        for a in parked
    ]
    first = parked[0]["id"]
    return [
        "",
        "calls waiting for approval",
        *table(("ID", "WHO", "TOOL", "COMMAND OR ARGUMENTS"), rows),
        f"  decide: orchestrator resume {ref} --approve-call {first} "
        f"(or --deny-call {first} --reason 'why')",
    ]


def plan_lines(info: dict[str, Any]) -> list[str]:
    """The plan (none without one): its versions and decisions, then the plan being
    built, task by task, with its todo's status, what it waits for and the task
    delegated for it (`session/report.plan_report`'s value)."""
    plan = info["plan"]
    if plan is None:
        return []
    lines = ["", f"plan v{plan['version']}, {plan['decision']}: {label(plan['goal'], 100)}"]
    versions = [
        [
            f"v{v['version']}",
            label(v["source"], 40),
            str(v["tasks"]),
            (v["decision"] or "awaiting approval")
            + (f" by {label(v['by'], 40)}" if v["by"] else "")
            + (f": {label(v['feedback'], 100)}" if v["feedback"] else ""),
        ]
        for v in plan["versions"]
    ]
    lines += table(("VERSION", "SOURCE", "TASKS", "DECISION"), versions, right={2})
    if plan["awaiting"] is not None and plan["awaiting"] != plan["version"]:
        lines.append(f"  v{plan['awaiting']} awaits approval (orchestrator execute ID --approve)")
    rows = [
        [
            label(task["id"], 40),
            task["todo"],
            label(task["title"], 80),
            label(", ".join(task["depends_on"]), 60) or NONE,
            f"{task['task']} {task['state']}" if task["task"] else task["state"],
        ]
        for task in plan["tasks"]
    ]
    if rows:
        lines += ["", *table(("STEP", "TODO", "TITLE", "AFTER", "TASK"), rows)]
    return lines


def agent_lines(agents: dict[str, Any]) -> list[str]:
    """One row per agent: its role, model, messages, model calls, tokens and context;
    then, for an agent whose automatic compaction is paused, why."""
    rows = []
    notes = []
    for agent_id, agent in agents.items():
        usage = agent["usage"]
        rows.append(
            [
                label(agent_id, 40),
                label(agent["role"], 40),
                label(agent["model"], 120),
                str(agent["messages"]),
                str(agent["model_calls"]),
                f"{usage['input_tokens']:,}",
                f"{usage['output_tokens']:,}",
                context_cell(agent),
            ]
        )
        breaker = agent["breaker"]
        if breaker["paused"]:
            notes.append(
                f"  {label(agent_id, 40)}: automatic compaction paused until round "
                f"{breaker['paused_until']} (its last compactions freed too little)"
            )
    header = ("AGENT", "ROLE", "MODEL", "MESSAGES", "CALLS", "INPUT", "OUTPUT", "CONTEXT")
    return ["", "agents", *table(header, rows, right={3, 4, 5, 6}), *notes]


def context_cell(agent: dict[str, Any]) -> str:
    """`1,912 tokens, 80% of 2,400`, and its compactions: `, 2 compactions`."""
    cell = f"{agent['tokens']:,} tokens"
    window = agent["window"]
    if window is not None and window["usable"]:
        cell += f", {agent['window_share']:.0%} of {window['usable']:,}"
    count = agent["compactions"]
    if count:
        cell += f", {count} compaction{'' if count == 1 else 's'}"
    return cell


def tree_lines(info: dict[str, Any]) -> list[str]:
    """The task tree under the main agent: each task's state, how long it ran (a task
    still open: up to the journal's last record; within the session's runs, not across
    the time between them), its subtree's usage, and what it is. The main agent's row
    has the session's status, how long its runs took together, and its usage."""
    if not info["tasks"]:
        return []
    last = info.get("last_record_time") or 0.0
    runs = [(start, end) for start, end in info["runs"]]
    session = info["usage"]["session"]
    main = [
        "main",
        info["status"],
        duration(total(runs)) if runs else NONE,
        str(session["calls"]),
        tokens(totals_tokens(session)),
        totals_cost(session),
        "the session",
    ]
    usage = info["usage"]["by_subtree"]
    where = any_ran_on(info["tasks"])
    rows = task_rows(info["tasks"], now_ms=last * 1000, usage=usage, where=where, runs=runs)
    header = (*TASK_HEADER, *USAGE_HEADER, *(("WHERE",) if where else ()), "WHAT")
    if where:
        main.insert(-1, NONE)
    return ["", "tasks", *table(header, [main, *rows], right={2, 3, 4, 5})]


def mailbox_lines(mailbox: list[dict[str, Any]]) -> list[str]:
    if not mailbox:
        return []
    rows = [
        [
            label(mail["message_id"], 40),
            str(mail["posted_seq"]),
            mail["kind"],
            label(mail["sender"], 40),
            label(mail["recipient"], 40),
            mail["priority"],
            str(mail["delivered_seq"]) if mail["delivered_seq"] else "not yet",
            one_line(mail["summary"], 72),
        ]
        for mail in mailbox
    ]
    header = ("ID", "SEQ", "KIND", "FROM", "TO", "PRIORITY", "DELIVERED", "SUMMARY")
    return ["", "mailbox", *table(header, rows, right={1, 6})]


def todo_lines(lists: dict[str, dict[str, Any]]) -> list[str]:
    """Each agent's todo list: its progress and goal, then one row per item with its
    status (or what blocks it) and its result or failure."""
    if not lists:
        return []
    lines = ["", "todos"]
    for agent, todos in lists.items():
        done, total = todos["progress"]["completed"], todos["progress"]["total"]
        goal = f" · {one_line(todos['goal'], 100)}" if todos["goal"] else ""
        lines.append(f"  {label(agent, 40)}: Tasks {done}/{total}{goal}")
        rows = []
        for item in todos["items"]:
            mark = item["status"]
            if item["blocked"] and mark == "pending":
                mark = "blocked by " + label(", ".join(item["blocked_by"]), 60)
            outcome = item["result"] or item["failure"]
            rows.append(
                [
                    label(item["id"], 40),
                    mark,
                    one_line(item["content"], 80)
                    + (f": {one_line(outcome, 60)}" if outcome else ""),
                ]
            )
        lines += table(("ID", "STATUS", "ITEM"), rows, indent="    ")
    return lines


def verification_lines(verifications: list[dict[str, Any]]) -> list[str]:
    """Every run of the verification commands, then the output of each that failed."""
    if not verifications:
        return []
    rows = [
        [
            str(v["seq"]),
            label(v["agent"], 40),
            "passed" if v["passed"] else f"failed, exit {v['exit_code']}",
            label("; ".join(v["commands"]), 160),
        ]
        for v in verifications
    ]
    lines = ["", "verifications", *table(("SEQ", "AGENT", "RESULT", "COMMANDS"), rows, right={0})]
    for v in verifications:
        if v["passed"]:
            continue
        output = v["output"].rstrip("\n").split("\n")
        more = len(output) - OUTPUT_LINES
        lines.append(f"  failed at {v['seq']} ({label(v['agent'], 40)}):")
        lines += ["  " + line for line in block("\n".join(output[:OUTPUT_LINES]))]
        if more > 0:
            lines.append(f"    … {more} more line{'' if more == 1 else 's'} (--json has them)")
    return lines


def assessment_lines(assessments: list[dict[str, Any]]) -> list[str]:
    if not assessments:
        return []
    rows = [
        [str(a["seq"]), label(a["agent"], 40), a["action"], one_line("; ".join(a["reasons"]), 400)]
        for a in assessments
    ]
    return ["", "assessments", *table(("SEQ", "AGENT", "ACTION", "WHY"), rows, right={0})]


def compaction_lines(compactions: list[dict[str, Any]]) -> list[str]:
    if not compactions:
        return []
    rows = [
        [
            str(c["seq"]),
            label(c["agent"], 40),
            c["reason"],
            c["method"],
            f"{c['before']:,} → {c['after']:,}",
            str(c["pruned"]),
            str(c["dropped"]),
        ]
        for c in compactions
    ]
    header = ("SEQ", "AGENT", "REASON", "METHOD", "TOKENS", "PRUNED", "DROPPED")
    return ["", "compactions", *table(header, rows, right={0, 4, 5, 6})]
