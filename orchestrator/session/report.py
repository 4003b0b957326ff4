"""What `sessions show` shows, read from the snapshot instead of folding the journal.

A session that ended cleanly has a snapshot naming the journal's last record. Then what
`describe` (cli_sessions.py) shows can be read without importing pydantic (whose import
and our record models are most of a small session's `show`): the manifest, the
snapshot's small state (agents, tasks, todo lists) and, for what the snapshot does not
keep, a few kinds of journal line parsed with orjson (every message, not only the live
ones; the usage of each model call; the assessment verdicts; the status's reason; the
last events). Anything else returns None and `describe` folds the journal: an older
format, a snapshot of another layout or behind the journal, anything unexpected.
`tests/test_overview.py` checks that both give the same on every recorded session and
on sessions made by real runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from orchestrator.errors import JournalCorrupt
from orchestrator.layout import FORMAT_VERSION, JOURNAL, MANIFEST, SNAPSHOT, SNAPSHOT_LAYOUT
from orchestrator.store.scan import JournalMark, JournalScan, scan_journal

if TYPE_CHECKING:
    from orchestrator.usage import Price

MANIFEST_FIELDS = (
    "id",
    "format_version",
    "goal",
    "model",
    "workspace",
    "created",
    "updated",
    "status",
    "journal_seq",
)
"""`Manifest`'s fields, in order (a test keeps them equal): a manifest with exactly these,
of these types, dumps as itself."""

STATUSES = frozenset(
    {"running", "completed", "failed", "interrupted", "blocked", "budget_exhausted"}
)
"""`SessionStatus` (a test keeps them equal)."""

TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def overview(directory: Path, last: int, prices: Mapping[str, Price]) -> dict[str, Any] | None:
    """`describe(directory, last, prices)`, the manifest's status as written, when the
    snapshot covers the whole journal; else None."""
    try:
        manifest = orjson.loads((directory / MANIFEST).read_bytes())
        snapshot = orjson.loads((directory / SNAPSHOT).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not _current(manifest) or not isinstance(snapshot, dict):
        return None
    if snapshot.get("layout") != SNAPSHOT_LAYOUT:
        return None
    try:
        scan = scan_journal(directory / JOURNAL, mark=_mark(snapshot.get("journal")))
    except (OSError, JournalCorrupt):
        return None  # `describe` says what is wrong
    if snapshot.get("seq") != scan.last_seq:
        return None  # records after the snapshot (a killed session): only the fold knows
    try:
        return _overview(manifest, snapshot, scan, last, prices)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _mark(value: Any) -> JournalMark | None:
    """The snapshot's journal mark, if it is one (the scan checks it fits the journal)."""
    if isinstance(value, list) and len(value) == 3 and all(type(v) is int for v in value):
        return JournalMark(*value)
    return None


def _current(manifest: Any) -> bool:
    """Whether the manifest is one of this format that `Manifest` would dump unchanged."""
    if not isinstance(manifest, dict) or tuple(manifest) != MANIFEST_FIELDS:
        return False
    strings = ("id", "goal", "model", "workspace", "created", "updated", "status")
    return (
        all(isinstance(manifest[key], str) for key in strings)
        and manifest["status"] in STATUSES
        and manifest["format_version"] == FORMAT_VERSION
        and type(manifest["format_version"]) is int
        and type(manifest["journal_seq"]) is int
    )


def _overview(
    manifest: dict[str, Any],
    snapshot: dict[str, Any],
    scan: JournalScan,
    last: int,
    prices: Mapping[str, Price],
) -> dict[str, Any]:
    history = _History(manifest["model"], prices)
    for seq, line in enumerate(scan.lines, 1):
        history.read(seq, line)
    ledger = history.ledger()
    notes = [f"the journal ends in a torn tail: {scan.cut.describe()}"] if scan.cut else []
    return {
        **manifest,
        "usage": ledger,
        "cache_share": cache_share(ledger["session"]),
        "usage_table": usage_table(ledger),
        "journal_records": scan.last_seq,
        "reason": history.reason if snapshot["status"] != "completed" else "",
        "agents": {
            agent_id: {
                "role": agent["role"],
                "messages": agent["message_count"],
                "model_calls": agent["steps"],
                "turn_open": agent["turn_open"],
                "usage": agent["usage"],
            }
            for agent_id, agent in snapshot["agents"].items()
        },
        "tasks": snapshot["tasks"],
        "mailbox": list(history.mail.values()),
        "todos": {agent: todo_view(todos) for agent, todos in snapshot["todos"].items()},
        "assessments": assessments(history.verdicts),
        "last_events": [frame_summary(orjson.loads(line)) for line in scan.lines[-last:]]
        if last > 0
        else [],
        "warnings": notes,
    }


class _History:
    """What the snapshot does not keep, from the journal's lines: every message (the
    snapshot keeps the live ones; as `mailbox.MailHistory` folds them), the usage of
    each model call (for `usage_ledger`), every assessment verdict and the last
    status's reason. Only the lines of those kinds are parsed."""

    def __init__(self, model: str, prices: Mapping[str, Price]) -> None:
        self.model = model  # the session's, for a reply that names none
        self.prices = prices
        self.mail: dict[str, dict[str, Any]] = {}
        self.calls: list[Call] = []
        self.verdicts: list[tuple[int, str, str, list[str]]] = []  # (seq, agent, action, reasons)
        self.reason = ""

    def read(self, seq: int, line: bytes) -> None:
        start = line.index(b'"k":"') + 5
        kind = line[start : line.index(b'"', start)]
        if kind == b"assistant_replied":
            fields = orjson.loads(line)
            usage = fields["message"].get("usage")
            if usage is not None:
                model = fields.get("model") or self.model
                self.calls.append((fields["a"], model, {k: usage.get(k, 0) for k in TOKENS}))
        elif kind == b"message_posted":
            self.posted(seq, orjson.loads(line))
        elif kind == b"messages_delivered":
            self.delivered(seq, orjson.loads(line)["ids"])
        elif kind == b"session_status":
            self.reason = orjson.loads(line).get("detail", "")
        elif kind == b"assessed":
            fields = orjson.loads(line)
            self.verdicts.append((seq, fields["a"], fields["action"], fields.get("reasons", [])))
        elif b'"delivers":' in line:  # a wait_tasks call's result
            self.delivered(seq, orjson.loads(line).get("delivers", ()))

    def posted(self, seq: int, fields: dict[str, Any]) -> None:
        self.mail[fields["id"]] = mail = {
            "message_id": fields["id"],
            "kind": fields["mail"],
            "priority": fields.get("priority", "notify"),
            "sender": fields["a"],
            "recipient": fields["to"],
            "task_id": fields["task"],
            "summary": fields["summary"],
            "data": fields.get("data"),
            "requires_ack": fields.get("requires_ack", False),
            "in_reply_to": fields.get("in_reply_to", ""),
            "posted_seq": seq,
            "delivered_seq": None,
            "answered_by": "",
            "ref": fields.get("ref", ""),
            "at": fields.get("at", 0),
        }
        asked = self.mail.get(mail["in_reply_to"])
        if asked is not None and asked["requires_ack"] and not asked["answered_by"]:
            asked["answered_by"] = mail["message_id"]

    def delivered(self, seq: int, ids: list[str]) -> None:
        for message_id in ids:
            mail = self.mail.get(message_id)
            if mail is not None and mail["delivered_seq"] is None:
                mail["delivered_seq"] = seq

    def ledger(self) -> dict[str, Any]:
        return usage_ledger(self.calls, self.prices)


Call = tuple[str, str, dict[str, int]]
"""A model call's `(agent, model, usage)`, its usage as a dict of the four `TOKENS`."""


def usage_ledger(calls: Iterable[Call], prices: Mapping[str, Price]) -> dict[str, Any]:
    """The usage and cost of `calls`, summed for the session, per agent and per model:
    `{"session": totals, "by_agent": {agent: totals}, "by_model": {model: totals}}`, each
    totals `{"calls", "usage", "cost_usd", "unpriced_calls"}`. A call of a model without a
    price counts as unpriced, and the cost is then a lower bound."""
    session = _totals()
    by_agent: dict[str, dict[str, Any]] = {}
    by_model: dict[str, dict[str, Any]] = {}
    cost_of = _pricing(prices)
    for agent, model, usage in calls:
        cost = cost_of(model, usage)
        for totals in (
            session,
            by_agent.setdefault(agent, _totals()),
            by_model.setdefault(model, _totals()),
        ):
            totals["calls"] += 1
            for key in TOKENS:
                totals["usage"][key] += usage[key]
            totals["cost_usd"] += cost or 0.0
            totals["unpriced_calls"] += cost is None
    return {"session": session, "by_agent": by_agent, "by_model": by_model}


def cache_share(totals: dict[str, Any]) -> float | None:
    """The share of prompt tokens read from the provider's cache (None without any
    prompt tokens): cache reads over all input, read, written or plain."""
    usage = totals["usage"]
    prompt = usage["input_tokens"] + usage["cache_read_tokens"] + usage["cache_write_tokens"]
    return usage["cache_read_tokens"] / prompt if prompt else None


def _totals() -> dict[str, Any]:
    return {"calls": 0, "usage": dict.fromkeys(TOKENS, 0), "cost_usd": 0.0, "unpriced_calls": 0}


def _pricing(prices: Mapping[str, Price]) -> Callable[[str, dict[str, int]], float | None]:
    """A call's cost, or None without a price (no prices: pydantic is not imported)."""
    if not prices:
        return lambda model, usage: None
    from orchestrator.messages import Usage
    from orchestrator.usage import call_cost

    return lambda model, usage: call_cost(prices, model, Usage(**usage))


def usage_table(ledger: dict[str, Any]) -> str:
    """A ledger (as `usage_ledger` makes it) as a small table."""
    header = (
        f"{'':<24} {'calls':>6} {'input':>10} {'output':>10} {'cache r/w':>15} {'cached':>7}"
        f" {'cost':>10}"
    )
    rows = [header]

    def row(label: str, totals: dict[str, Any]) -> str:
        u = totals["usage"]
        calls, unpriced = totals["calls"], totals["unpriced_calls"]
        cache = f"{u['cache_read_tokens']}/{u['cache_write_tokens']}"
        cost = f"${totals['cost_usd']:.4f}" + ("" if unpriced == 0 else "+")
        if calls and unpriced == calls:
            cost = "unpriced"
        share = cache_share(totals)
        cached = "-" if share is None else f"{share:.0%}"
        return (
            f"{label:<24} {calls:>6} {u['input_tokens']:>10} {u['output_tokens']:>10}"
            f" {cache:>15} {cached:>7} {cost:>10}"
        )

    session = ledger["session"]
    rows.append(row("session", session))
    rows += [row(f"agent {name}", t) for name, t in sorted(ledger["by_agent"].items())]
    rows += [row(f"model {name}", t) for name, t in sorted(ledger["by_model"].items())]
    if session["unpriced_calls"] and session["calls"] != session["unpriced_calls"]:
        rows.append("+ some calls had no price in the config: the cost is a lower bound")
    return "\n".join(rows)


def todo_view(todos: dict[str, Any]) -> dict[str, Any]:
    """A snapshot's todo list as `TodoList.view()` shows it: progress, and each item with
    the items it blocks and whether it is blocked (computed, never stored)."""
    items = todos["items"]
    status = {item["id"]: item["status"] for item in items}
    blocks: dict[str, list[str]] = {}
    for item in items:
        for blocker in item["blocked_by"]:
            blocks.setdefault(blocker, []).append(item["id"])
    counted = [item for item in items if item["status"] != "cancelled"]
    return {
        "goal": todos["goal"],
        "progress": {
            "completed": sum(item["status"] == "completed" for item in counted),
            "total": len(counted),
        },
        "items": [
            {
                **item,
                "blocks": blocks.get(item["id"], []),
                "blocked": any(status.get(b) != "completed" for b in item["blocked_by"]),
            }
            for item in items
        ],
    }


def assessments(verdicts: Iterable[tuple[int, str, str, Iterable[str]]]) -> list[dict[str, Any]]:
    """The assessment verdicts `(seq, agent, action, reasons)` of a journal, in its order,
    as `sessions show` prints them."""
    return [
        {"seq": seq, "agent": agent, "action": action, "reasons": list(reasons)}
        for seq, agent, action, reasons in verdicts
    ]


def frame_summary(fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "seq": fields["seq"],
        "time": fields["t"] / 1000,
        "kind": fields["k"],
        "agent": fields["a"],
    }
