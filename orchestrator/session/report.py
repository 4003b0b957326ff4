"""The report of a session: what `sessions show` prints (as text and `--json`), and what
the library's inspection reads.

It is made of one snapshot (`state.snapshot.Snapshot`) and what the snapshot does not keep,
read from the journal's records (`History`: every message, not only the live ones; the
usage of each model call, a compaction's summary calls included; the assessment
verdicts; each compaction; the model each agent last used; the status's reason; the last
events).
A session that ended cleanly has a snapshot naming the journal's last record: then the
snapshot is read as written, and only the journal's lines of the kinds `History` wants are
decoded (`quick_describe`), without folding and without importing pydantic. Otherwise
`describe` folds the whole journal, and takes the snapshot of that fold.

A session whose tasks ran on workers has their records in the engine's database: read by
the `WorkersReader` handed in (session/on_workers.py), each task's context, usage and
todos are reported as a local task's are (`on_workers` says from where, or why not).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import orjson

from orchestrator.errors import SessionError
from orchestrator.layout import FORMAT_VERSION, JOURNAL, SNAPSHOT
from orchestrator.loop.compaction import Window
from orchestrator.loop.plan_run import todo_status
from orchestrator.messages import ToolCall, plain
from orchestrator.session.history import History
from orchestrator.session.ledger import cache_share, usage_ledger
from orchestrator.session.listing import session_info
from orchestrator.session.on_workers import WorkersReader, with_workers
from orchestrator.session.runs import journal_runs
from orchestrator.session.status import resumable, shown_status
from orchestrator.state.manifest import Manifest, read_manifest
from orchestrator.state.snapshot import AgentSummary, Snapshot, decode_snapshot
from orchestrator.state.tasks import TaskRecord
from orchestrator.store._line import line_time
from orchestrator.store.scan import JournalScan, scan_journal

if TYPE_CHECKING:
    from orchestrator.prices.cost import Price


Windows = Callable[[str], Window | None]
"""The context window of a model, by its name ("openai:gpt-4.1", "scripted:s.json"), when
known (the config, the model's own claim): what the share of each agent's window is
measured against, with those the session learned from context-too-long errors."""


def quick_describe(
    directory: Path,
    last: int,
    prices: Mapping[str, Price],
    windows: Windows | None = None,
    workers: WorkersReader | None = None,
) -> dict[str, Any] | None:
    """The report read from the snapshot, when the snapshot covers the whole journal of a
    session of this format (one that ended cleanly); else None (`describe` says why)."""
    try:
        manifest = read_manifest(directory)
        snapshot = decode_snapshot((directory / SNAPSHOT).read_bytes())
        if manifest.format_version != FORMAT_VERSION:
            return None
        scan = scan_journal(directory / JOURNAL, mark=snapshot.journal)
    except (OSError, SessionError, msgspec.DecodeError):
        return None  # `describe` says what is wrong, if anything is
    if snapshot.seq != scan.last_seq:
        return None  # records after the snapshot (a killed session): only the fold knows
    if any(agent.message_count and not agent.tokens for agent in snapshot.agents.values()):
        return None  # written before snapshots sized the contexts: the fold sizes them
    history = History(manifest.model)
    try:
        for seq, line in enumerate(scan.lines, 1):
            history.read_line(seq, line)
    except ValueError:  # a line without its kind, or not of its kind's schema (DecodeError)
        return None
    return _report(directory, manifest, snapshot, scan, history, last, prices, windows, workers)


def describe(
    directory: Path,
    last: int,
    prices: Mapping[str, Price],
    windows: Windows | None = None,
    workers: WorkersReader | None = None,
) -> dict[str, Any]:
    """The report folded from the whole journal (of a session of this format)."""
    from orchestrator.session.replay import folded, gc_paused, read_snapshot
    from orchestrator.state.fold import SessionState

    manifest = read_manifest(directory)
    # The snapshot's mark spares checking the journal line by line up to it (`show` of a
    # killed session comes here after `quick_describe` has scanned the journal once).
    known = read_snapshot(directory, warn=lambda _: None)
    state = SessionState()
    history = History(manifest.model)
    with gc_paused():
        scan = scan_journal(directory / JOURNAL, mark=None if known is None else known.journal)
        for seq, record in folded(state, scan):
            history.read(seq, record)
        snapshot = state.snapshot()
    return _report(directory, manifest, snapshot, scan, history, last, prices, windows, workers)


def _report(
    directory: Path,
    manifest: Manifest,
    snapshot: Snapshot,
    scan: JournalScan,
    history: History,
    last: int,
    prices: Mapping[str, Price],
    windows: Windows | None,
    workers: WorkersReader | None,
) -> dict[str, Any]:
    on_workers, agents, todos, tasks = with_workers(
        manifest.id, snapshot, history.read_calls, workers
    )
    snapshot = msgspec.structs.replace(snapshot, tasks=tasks)  # (with those of its tasks' own)
    owners = {task.task_id: task.owner for task in snapshot.tasks}
    ledger = usage_ledger(history.calls, prices, owners)
    notes = [f"the journal ends in a torn tail: {scan.cut.describe()}"] if scan.cut else []
    status = shown_status(directory, snapshot.status)  # the journal's, not the mirror's
    return {
        **msgspec.to_builtins(manifest),
        "status": status,
        "resumable": resumable(directory, status),
        "usage": ledger,
        # The share of prompt tokens read from the providers' caches (None: no calls).
        "cache_share": cache_share(ledger["session"]),
        "journal_records": scan.last_seq,
        # When the journal's first and last records were written (Unix seconds; None: no
        # records): what a task still open is timed up to, and how long the session ran.
        "first_record_time": _time(scan.lines[0]) if scan.lines else None,
        "last_record_time": _time(scan.lines[-1]) if scan.lines else None,
        # When each run began and ended (Unix seconds; session/runs.py): what a task's
        # time and the session's are counted within.
        "runs": [list(span) for span in journal_runs(scan.lines).spans()],
        # What the session runs with, and a resume with it (None: no settings record yet).
        "settings": None if snapshot.settings is None else plain(snapshot.settings),
        "reason": history.reason if snapshot.status != "completed" else "",
        "agents": {
            agent_id: {
                "role": agent.role,
                "messages": agent.message_count,
                "model_calls": agent.steps,
                "turn_open": agent.turn_open,
                "usage": plain(agent.usage),
                **_context(agent, history.models.get(agent_id, manifest.model), snapshot, windows),
            }
            for agent_id, agent in agents.items()
        },
        "compactions": history.compactions,
        "tasks": msgspec.to_builtins(snapshot.tasks),
        "mailbox": history.mail.dump(),
        "todos": {agent: listed.load().view() for agent, listed in todos.items()},
        "plan": plan_report(snapshot),
        "assessments": [
            {"seq": seq, "agent": v.agent, "action": v.action, "reasons": list(v.reasons)}
            for seq, v in history.verdicts
        ],
        "verifications": history.verifications,
        "last_events": [_frame_summary(line) for line in scan.lines[-last:]] if last > 0 else [],
        "warnings": notes,
        # Where the records of its tasks on workers were read, or why not (None: its
        # tasks ran in its own process).
        "on_workers": on_workers,
        # Calls parked for a person's decision (state/approvals.py), oldest first.
        "approvals": approvals_report(snapshot, history.replies),
    }


def approvals_report(
    snapshot: Snapshot, replies: Mapping[int, tuple[ToolCall, ...]]
) -> list[dict[str, Any]]:
    """Each call parked for a person's decision: its id (what `resume --approve-call`
    takes), whose it is, the tool, a shell call's command and the raw arguments."""
    tasks = {task.task_id: task for task in snapshot.tasks}
    found = []
    for parked in sorted(snapshot.approvals.pending.values(), key=lambda p: p.seq):
        seq, _, index = parked.ref.partition(".")
        calls = replies.get(int(seq), ()) if seq.isdigit() else ()
        call = calls[int(index or 0)] if (index or "0").isdigit() and calls else None
        task = tasks.get(parked.agent)
        who = "the main agent" if task is None else f"task {task.task_id} ({task.agent_type})"
        shell = call is not None and call.name == "shell"
        found.append(
            {
                "id": parked.id,
                "agent": parked.agent,
                "who": who,
                "tool": call.name if call is not None else "",
                "command": _command(call) if shell and call is not None else None,
                "arguments": call.arguments if call is not None else "",
            }
        )
    return found


def _command(call: ToolCall) -> str:
    """A shell call's command ("" when unreadable), as tools/permissions.py reads it
    (not imported: the tools bring pydantic, which `show` from a snapshot does without)."""
    try:
        arguments = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        return ""
    command = arguments.get("command") if isinstance(arguments, dict) else None
    return command if isinstance(command, str) else ""


def plan_report(snapshot: Snapshot) -> dict[str, Any] | None:
    """The session's plan (None: it has none): every version and its decision, and the
    plan being built (else the latest) task by task: the task delegated for it, its
    state and the status its todo shows (docs/plans.md)."""
    plans = snapshot.plans
    shown = plans.approved_version or plans.latest
    if shown is None:
        return None
    latest: dict[str, TaskRecord] = {}
    for record in sorted(snapshot.tasks, key=lambda t: t.created_seq):
        if record.plan_ref:
            latest[record.plan_ref] = record
    tasks = []
    for planned in shown.plan.tasks:
        found = latest.get(planned.id)
        state = found.state if found is not None else ""
        tasks.append(
            {
                "id": planned.id,
                "title": planned.title,
                "depends_on": list(planned.depends_on),
                "task": found.task_id if found is not None else "",
                "state": state or "not delegated",
                "todo": todo_status(state),
            }
        )
    pending = plans.pending
    return {
        "version": shown.version,
        "decision": shown.decision or "awaiting approval",
        "awaiting": pending.version if pending is not None else None,
        "goal": shown.plan.goal,
        "versions": [
            {
                "version": v.version,
                "source": v.source,
                "decision": v.decision or "",
                "by": v.by,
                "feedback": v.feedback,
                "tasks": len(v.plan.tasks),
            }
            for v in plans.versions
        ],
        "tasks": tasks,
    }


def _context(
    agent: AgentSummary, model: str, snapshot: Snapshot, windows: Windows | None
) -> dict[str, Any]:
    """An agent's live context: its size in tokens (estimated, calibrated on the
    provider's counts), the window of its model when known and the share of it in use,
    its compactions and summary calls, and the breaker (`paused`: the fraction trigger
    waits until round `paused_until`)."""
    window = window_of(model, snapshot.windows, windows)
    usable = window.usable if window is not None else 0
    return {
        "model": model,
        "tokens": agent.tokens,
        "window": None
        if window is None
        else {"context": window.context, "output": window.output, "usable": usable},
        "window_share": round(agent.tokens / usable, 4) if usable else None,
        "compactions": agent.compactions,
        "summary_calls": agent.summary_calls,
        "breaker": {
            "failures": agent.breaker.failures,
            "paused_until": agent.breaker.paused_until,
            "paused": agent.breaker.paused(agent.steps),
        },
    }


def window_of(model: str, learned: Mapping[str, int], windows: Windows | None) -> Window | None:
    """The window of `model`: the known one (`windows`), or the one the session learned
    from a context-too-long error when that is smaller (as the compactor judges it)."""
    known = windows(model) if windows is not None else None
    found = learned.get(model)
    if found and (known is None or found < known.context):
        return Window(found, known.output if known is not None else 0)
    return known


def _time(line: bytes) -> float:
    return line_time(line) / 1000


def _frame_summary(line: bytes) -> dict[str, Any]:
    fields = orjson.loads(line)
    return {
        "seq": fields["seq"],
        "time": fields["t"] / 1000,
        "kind": fields["k"],
        "agent": fields["a"],
    }


def read_report(
    directory: Path,
    last: int,
    prices: Mapping[str, Price],
    windows: Windows | None,
    warn: Callable[[str], None],
    workers: WorkersReader | None = None,
) -> dict[str, Any]:
    """The report's data: read from the snapshot when it covers the journal, else
    folded (after migrating an older format)."""
    session_info(directory)  # (a manifest left behind by a kill catches up, if it can)
    windows = windows or claimed_windows(directory)
    data = quick_describe(directory, last, prices, windows, workers)
    if data is None:
        # Imported here: a session that ended cleanly in this format needs no migration.
        from orchestrator.session.migrations import bring_up_to_date

        bring_up_to_date(directory, warn)
        data = describe(directory, last, prices, windows, workers)
    return data


def claimed_windows(directory: Path) -> Windows:
    """The windows known without a provider: a scripted model's, from its script's
    `window` (read as plain JSON, without the script's schema: `show` imports no model)."""
    try:
        spec = read_manifest(directory).model_spec(directory)
    except SessionError:
        return lambda model: None
    prefix, _, rest = spec.partition(":")
    if prefix != "scripted":
        return lambda model: None
    try:
        claimed = orjson.loads(Path(rest).read_bytes()).get("window") or {}
        window = Window(int(claimed["context"]), int(claimed.get("output", 0)))
    except (OSError, orjson.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError):
        return lambda model: None
    name = f"scripted:{Path(rest).name}"  # as ScriptedModel.from_file names it
    return lambda model: window if model == name else None
