"""The points of a session a person would go back to (`sessions points ID`): the goal and
each message the person sent, each plan version and decision, each task's delegation
and end, each compaction, each workspace checkpoint, each run's end, and the fork the
session came from; each named by its journal seq, with its time, a one-line summary and
the workspace checkpoint in force there (the last one at or before it).

Read from the journal's frames, each record's JSON parsed only for the few kinds listed:
no fold, so a session of any size is listed in about the time of a scan.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import orjson

from orchestrator.errors import SessionError
from orchestrator.layout import JOURNAL
from orchestrator.store import scan_journal
from orchestrator.text import abbreviate, visible

SUMMARY = 100  # characters of a point's summary
SETTLED = frozenset({"completed", "failed", "cancelled"})
_KINDS = frozenset(
    {
        "agent_started",
        "message_posted",
        "plan_submitted",
        "plan_decided",
        "task_created",
        "task_changed",
        "context_compacted",
        "workspace_checkpoint",
        "workspace_restored",
        "session_status",
        "session_forked",
        "assistant_replied",  # (only for the tool a checkpoint's call ran)
    }
)


class Point(msgspec.Struct, frozen=True, kw_only=True):
    """A point of a session: `seq`, the record's; `at`, its time (Unix ms); `kind`, what
    happened (`start`, `message`, `plan`, `decision`, `delegated`, `task_ended`,
    `compaction`, `checkpoint`, `run_ended`, `forked`); `agent`; `summary`, one line;
    `tree`, the workspace checkpoint in force there ("" when none was taken yet)."""

    seq: int
    at: int
    kind: str
    agent: str
    summary: str
    tree: str = ""


def session_points(directory: Path) -> list[Point]:
    """Every point of the session in `directory`, oldest first."""
    path = directory / JOURNAL
    if not path.exists():
        raise SessionError(f"no journal at {path}")
    scan = scan_journal(path)
    found: list[Point] = []
    tree = ""
    calls: dict[str, str] = {}  # ref -> tool, of the replies with calls
    for seq, line in enumerate(scan.lines, 1):
        kind = _kind(line)
        if kind not in _KINDS:
            continue
        record: dict[str, Any] = orjson.loads(line)
        if kind == "assistant_replied":
            for index, call in enumerate(record.get("message", {}).get("tool_calls", ())):
                calls[f"{seq}.{index}"] = call.get("name", "")
            continue
        if kind in ("workspace_checkpoint", "workspace_restored"):
            tree = record["tree"]
        said = _SAID[kind](record, calls)
        if said is not None:
            what, summary = said
            found.append(
                Point(
                    seq=seq,
                    at=record["t"],
                    kind=what,
                    agent=record["a"],
                    summary=visible(abbreviate(summary, SUMMARY)),
                    tree=tree,
                )
            )
    return found


def _kind(line: bytes) -> str:
    """A line's kind, read from its frame (`{"seq":N,"t":T,"k":"KIND",...`)."""
    start = line.find(b'"k":"')
    if start < 0:
        return ""
    start += 5
    return line[start : line.find(b'"', start)].decode()


Said = tuple[str, str] | None  # (the point's kind, its summary), or not a point


def _started(r: dict[str, Any], calls: dict[str, str]) -> Said:
    role = r.get("role", "main")
    if r["a"] == "main" and role in ("main", "builder"):
        messages = r.get("messages", ())
        goal = next((m.get("content", "") for m in messages if m.get("role") == "user"), "")
        return "start", f"{role} started: {_line(goal)}"
    if r["a"] == "planner":
        return "start", "the planner started"
    return None


def _posted(r: dict[str, Any], calls: dict[str, str]) -> Said:
    if r["a"] != "user":
        return None
    return "message", f"you to {r.get('to', 'main')}: {_line(r.get('summary', ''))}"


def _plan(r: dict[str, Any], calls: dict[str, str]) -> Said:
    tasks = len(r.get("plan", {}).get("tasks", ()))
    return "plan", f"plan v{r.get('version')} submitted by {r['a']} ({tasks} tasks)"


def _decided(r: dict[str, Any], calls: dict[str, str]) -> Said:
    by = r.get("by", "person")
    return "decision", f"plan v{r.get('version')} {r.get('decision')} by {by}"


def _created(r: dict[str, Any], calls: dict[str, str]) -> Said:
    what = _line(r.get("description", ""))
    return "delegated", f"{r['task']} delegated by {r['a']} to {r.get('agent_type', '')}: {what}"


def _changed(r: dict[str, Any], calls: dict[str, str]) -> Said:
    if r.get("state") not in SETTLED:
        return None
    reason = f": {_line(r['reason'])}" if r.get("reason") else ""
    return "task_ended", f"{r['task']} {r['state']}{reason}"


def _compacted(r: dict[str, Any], calls: dict[str, str]) -> Said:
    tokens = f"{r.get('before', 0)} -> {r.get('after', 0)} tokens"
    return "compaction", f"{r['a']}'s context compacted ({r.get('method', 'pruned')}, {tokens})"


def _restored(r: dict[str, Any], calls: dict[str, str]) -> Said:
    return "checkpoint", f"workspace restored to {r['tree'][:12]}"


def _status(r: dict[str, Any], calls: dict[str, str]) -> Said:
    if r.get("status") == "running":
        return None
    detail = f": {_line(r['detail'])}" if r.get("detail") else ""
    return "run_ended", f"run ended {r['status']}{detail}"


def _forked(r: dict[str, Any], calls: dict[str, str]) -> Said:
    where = r.get("workspace", "none")
    return "forked", f"forked from {r['parent']} at seq {r['at']} (workspace {where})"


def _checkpoint(r: dict[str, Any], calls: dict[str, str]) -> Said:
    why = r.get("why", "call")
    tree = r["tree"][:12]
    left = f", {len(r['left_out'])} left out" if r.get("left_out") else ""
    if why == "call":
        tool = calls.get(r.get("ref", ""), "a call")
        return "checkpoint", f"workspace after {r['a']}'s {tool} ({r.get('ref', '')}): {tree}{left}"
    what = {"start": "as a run started", "restore": "before a restore", "end": "as a run ended"}
    return "checkpoint", f"workspace {what.get(why, why)}: {tree}{left}"


def _line(text: str) -> str:
    return " ".join(str(text).split())


_SAID: dict[str, Callable[[dict[str, Any], dict[str, str]], Said]] = {
    "agent_started": _started,
    "message_posted": _posted,
    "plan_submitted": _plan,
    "plan_decided": _decided,
    "task_created": _created,
    "task_changed": _changed,
    "context_compacted": _compacted,
    "workspace_checkpoint": _checkpoint,
    "workspace_restored": _restored,
    "session_status": _status,
    "session_forked": _forked,
}
