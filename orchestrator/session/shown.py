"""What people read of a session, in one notation wherever it is shown: durations
(`1m12s`), costs (`$0.0312`, `unpriced`), token counts (`12.4k`), times (`2026-11-27
06:06:12 UTC`), tables aligned to their widest cell under a header, and the task tree
drawn with its glyphs (`├─ └─ │`). `sessions show` prints with these, and so does the end
of a run; a live view draws with the same, so that a session reads alike everywhere.

Plain functions over plain values (the report's data, `session/report.py`): no terminal,
no colour. What a model or a tool wrote reaches a cell through `text.label`, one line."""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from orchestrator.session.runs import Span, ran
from orchestrator.text import label

UNPRICED = "unpriced"
"""The cost of calls to models without a price: unknown, not zero."""
NONE = "-"
"""A cell with nothing to say."""


def duration(seconds: float) -> str:
    """`0.4s`, `12s`, `1m12s`, `2h05m`, `2d04h`: two units at most, the larger first."""
    seconds = max(seconds, 0.0)
    if round(seconds, 1) < 10:
        return f"{round(seconds, 1):.1f}s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02}s"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02}m"
    return f"{whole // 86400}d{whole % 86400 // 3600:02}h"


def cost(usd: float | None, *, lower_bound: bool = False) -> str:
    """`$0.0312` (four decimals under a dollar, two above), `unpriced` when no call had a
    price; a `+` when some calls had none (so the cost is at least this)."""
    if usd is None:
        return UNPRICED
    if usd == 0:
        text = "$0"
    elif usd < 0.0001:
        text = "<$0.0001"
    else:
        text = f"${usd:.4f}" if usd < 1 else f"${usd:,.2f}"
    return text + ("+" if lower_bound else "")


def totals_cost(totals: Mapping[str, Any]) -> str:
    """The cost of a ledger's totals (`session/ledger.py`: `cost_usd`, `calls`,
    `unpriced_calls`) in the one notation; `-` without calls (nothing spent, priced or
    not)."""
    if not totals["calls"]:
        return NONE
    unpriced = totals["unpriced_calls"]
    return cost(totals["cost_usd"], lower_bound=0 < unpriced < totals["calls"])


def tokens(count: int) -> str:
    """`535`, `12.4k`, `3.1M`: a count of tokens at a glance."""
    if count < 1000:
        return str(count)
    if round(count / 1000, 1) < 1000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.1f}M"


def totals_tokens(totals: Mapping[str, Any]) -> int:
    """Every token of a ledger's totals: input, cache reads and writes, and output."""
    usage = totals["usage"]
    return int(
        usage["input_tokens"]
        + usage["cache_read_tokens"]
        + usage["cache_write_tokens"]
        + usage["output_tokens"]
    )


def moment(stamp: str) -> str:
    """An ISO time (a manifest's `created`) as `2026-11-27 06:06:12 UTC`: to the second,
    in UTC; shown as it is when it is no time."""
    try:
        parsed = datetime.fromisoformat(stamp)
    except ValueError:
        return label(stamp, 40)
    if parsed.tzinfo is None:
        return parsed.strftime("%Y-%m-%d %H:%M:%S")
    return parsed.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def one_line(text: object, width: int) -> str:
    """What a model or a tool wrote, in a cell: runs of whitespace made one space,
    control characters escaped, cut to `width` with an ellipsis."""
    return label(" ".join(str(text).split()), width)


def width(text: str) -> int:
    """The columns `text` takes on a terminal: two for a wide character (CJK), none for
    a combining mark."""
    if text.isascii():
        return len(text)
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    right: Collection[int] = (),
    indent: str = "  ",
) -> list[str]:
    """`rows` under `header`, each column as wide as its widest cell, two spaces apart;
    the columns numbered in `right` aligned right (numbers), the others left. No line
    ends in spaces, so a long last cell (a summary) never shifts the others."""
    lines = [list(header), *(list(row) for row in rows)]
    widths = [max(width(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for line in lines:
        cells = []
        for i, cell in enumerate(line):
            pad = " " * (widths[i] - width(cell))
            cells.append(pad + cell if i in right else cell + pad)
        out.append((indent + "  ".join(cells)).rstrip())
    return out


def branches(parents: Mapping[str, str], root: str) -> list[tuple[str, str]]:
    """A tree's nodes below `root`, depth first in the order of `parents` (each node's
    parent), each with the glyphs that draw it: `├─ `, `└─ ` for the last child, behind
    `│  ` or three spaces for each level above. A node whose parent is not in the tree
    hangs from the root; a cycle is cut where it closes."""
    children: dict[str, list[str]] = {}
    for node, parent in parents.items():
        children.setdefault(parent if parent in parents else root, []).append(node)
    drawn: list[tuple[str, str]] = []
    seen = {root}
    stack: list[tuple[str, str, bool]] = [
        (node, "", i == len(children.get(root, [])) - 1)
        for i, node in enumerate(children.get(root, []))
    ][::-1]
    while stack:
        node, lead, last = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        drawn.append((lead + ("└─ " if last else "├─ "), node))
        below = children.get(node, [])
        inner = lead + ("   " if last else "│  ")
        stack += [(child, inner, i == len(below) - 1) for i, child in enumerate(below)][::-1]
    return drawn


TASK_HEADER = ("TASK", "STATE", "TOOK")
USAGE_HEADER = ("CALLS", "TOKENS", "COST")
_SETTLED = ("completed", "failed", "cancelled")


def task_rows(
    tasks: Sequence[Mapping[str, Any]],
    *,
    now_ms: float,
    usage: Mapping[str, Mapping[str, Any]] | None = None,
    where: bool = False,
    runs: Sequence[Span] | None = None,
) -> list[list[str]]:
    """The delegated tasks (`TaskRecord`s as plain data) as rows of the tree under the
    main agent: the task drawn in its place, its state, how long it ran (an open task:
    until `now_ms`; counted within the session's `runs` when given, `session/runs.py`),
    with `usage` (a ledger's `by_subtree`) its subtree's calls, tokens and cost, with
    `where` where its latest run ran (`ran_on`), and what it is: its type and
    description, then its latest word (its result, progress or reason, or what it waits
    for)."""
    by_id = {task["task_id"]: task for task in tasks}
    rows = []
    for glyphs, task_id in branches({t: by_id[t]["owner"] for t in by_id}, "main"):
        task = by_id[task_id]
        settled = task["state"] in _SETTLED
        took = NONE
        if task["created"]:
            end = task["updated"] if settled else now_ms
            took = duration(ran(runs, task["created"] / 1000, end / 1000))
        row = [glyphs + label(task_id, 40), task["state"], took]
        if usage is not None:
            totals = usage.get(task_id)
            row += (
                [NONE] * 3
                if totals is None
                else [str(totals["calls"]), tokens(totals_tokens(totals)), totals_cost(totals)]
            )
        if where:
            row.append(ran_on(task.get("ran_on")))
        rows.append([*row, _what(task)])
    return rows


def ran_on(where: Mapping[str, Any] | None) -> str:
    """Where a task's latest run ran, `host:pid`, with its engine's worker when there is
    one (a worker id that starts with `host:pid:`, as a DBOS executor's here, alone)."""
    if not where:
        return NONE
    place = f"{label(where['host'], 60)}:{where['pid']}"
    worker = where.get("worker", "")
    if not worker:
        return place
    return label(worker, 80) if worker.startswith(place + ":") else f"{place} {label(worker, 60)}"


def any_ran_on(tasks: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any task says where it ran (journals before that was recorded do not)."""
    return any(task.get("ran_on") for task in tasks)


def _what(task: Mapping[str, Any]) -> str:
    what = f"{label(task['agent_type'], 40)}: {one_line(task['description'], 50)}"
    latest = task["progress"]
    if task["state"] == "completed" and task["completion"]:
        latest = task["completion"]["summary"]
    if latest:
        what += f" · {one_line(latest, 60)}"
    if task["reason"] and task["state"] != "completed":
        what += f" · {one_line(task['reason'], 60)}"
    elif task["state"] == "waiting_deps":
        deps = [*task.get("after", ()), *task.get("after_plan", ())]
        what += f" · waits for {one_line(', '.join(deps), 60)}"
    return what
