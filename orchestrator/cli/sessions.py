"""`orchestrator sessions list | show | verify | repair | delete` (and `compact`, in
compact.py): look after sessions without running them."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from orchestrator.errors import ConfigError, SessionError, SessionNotFound
from orchestrator.layout import LOCK, MANIFEST
from orchestrator.session.check import repair, verify
from orchestrator.session.status import current_status
from orchestrator.store.ids import is_session_id, session_dir
from orchestrator.text import abbreviate, label, visible

if TYPE_CHECKING:
    from orchestrator.loop.compaction import Window
    from orchestrator.usage import Price

# Folding journals (and pydantic, which verify and repair may need) is imported by the
# commands that need it, so that `sessions list` (and `show`, from a snapshot) starts
# without it.


def session_ids(root: Path) -> list[str]:
    """Our session directories under root, newest first (ids sort by time)."""
    if not root.is_dir():
        return []
    return sorted(
        (p.name for p in root.iterdir() if is_session_id(p.name) and (p / MANIFEST).exists()),
        reverse=True,
    )


def latest_session_id(root: Path) -> str:
    ids = session_ids(root)
    if not ids:
        raise SessionNotFound(f"no sessions under {root}")
    return ids[0]


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError


def _listing(directory: Path) -> tuple[str, str, str]:
    """(created, status, goal) from a manifest, read without its model: listing a
    thousand sessions should cost a thousand small reads, not a schema library's start.
    The status is the journal's (read through the manifest: session/status.py)."""
    try:
        fields = orjson.loads((directory / MANIFEST).read_bytes())
        values = fields["created"], fields["status"], fields["goal"]
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise SessionError(f"{directory / MANIFEST} is not a readable manifest ({exc})") from exc
    if not all(isinstance(value, str) for value in values):
        raise SessionError(f"{directory / MANIFEST} is not a valid manifest")
    return values[0], current_status(directory, fields), values[2]


def _session_size(directory: Path) -> int:
    """The session's own files: a workspace inside it, however big, is not walked."""
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file())


def _list(root: Path, *, as_json: bool = False) -> int:
    ids = session_ids(root)
    if as_json:
        for session_id in ids:
            directory = root / session_id
            entry: dict[str, Any] = {"id": session_id}
            try:
                created, status, goal = _listing(directory)
            except SessionError as exc:
                entry["error"] = str(exc)
            else:
                entry |= {
                    "created": created,
                    "status": status,
                    "size": _session_size(directory),
                    "goal": goal,
                }
            print(orjson.dumps(entry).decode())
        return 0
    if not ids:
        print(f"no sessions under {root}")
        return 0
    print(f"{'ID':<24} {'CREATED':<25} {'STATUS':<20} {'SIZE':>9}  GOAL")
    for session_id in ids:
        directory = root / session_id
        try:
            created, status, goal = _listing(directory)
        except SessionError as exc:
            print(f"{session_id:<24} unreadable: {visible(str(exc))}")
            continue
        print(
            f"{session_id:<24} {created:<25} {status:<20} "
            f"{_human(_session_size(directory)):>9}  {visible(abbreviate(goal, 60))}"
        )
    return 0


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


def _current(directory: Path) -> None:
    """Migrate a session of an older format first (under its lock), saying so: the
    commands that read journals read only the current format."""
    from orchestrator.state.manifest import FORMAT_VERSION, read_manifest

    manifest = read_manifest(directory)
    if manifest.format_version < FORMAT_VERSION:
        from orchestrator.session.migrations import migrate
        from orchestrator.store import SessionLock

        with SessionLock(directory / LOCK):
            migrate(directory, manifest)
        print(
            f"note: migrated session {directory.name} from format {manifest.format_version} "
            f"to {FORMAT_VERSION}; the original journal is kept beside it",
            file=sys.stderr,
        )


def _verify(root: Path, session_id: str) -> int:
    directory = session_dir(root, session_id)
    _current(directory)
    problems = verify(directory)
    for problem in problems:
        print(f"problem: {problem}")
    if problems:
        return 1
    print(f"{session_id}: every record checks out")
    return 0


def _show(
    root: Path, session_id: str, *, as_json: bool, last: int, prices: Mapping[str, Price]
) -> int:
    from orchestrator.cli.plan_view import plan_lines
    from orchestrator.session.report import describe, quick_describe

    directory = session_dir(root, session_id)
    _listing(directory)  # (a manifest left behind by a kill catches up, if it can)
    windows = _claimed_windows(directory)
    info = quick_describe(directory, last, prices, windows)
    if info is None:
        _current(directory)
        info = describe(directory, last, prices, windows)
    table = info.pop("usage_table")
    if as_json:
        sys.stdout.write(orjson.dumps(info, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    print(f"session   {info['id']}")
    print(f"goal      {visible(info['goal'])}")
    print(f"status    {info['status']}")
    if info["reason"]:
        print(f"reason    {visible(info['reason'])}")
    print(f"model     {info['model']}")
    print(f"workspace {info['workspace']}")
    print(f"created   {info['created']}  updated {info['updated']}")
    print(f"journal   {info['journal_records']} records")
    print(f"settings  {_settings_line(info['settings'])}")
    for line in plan_lines(info["plan"]):
        print(line.replace("execute ID", f"execute {info['id']}"))
    print("agents")
    for agent_id, agent in info["agents"].items():
        usage = agent["usage"]
        print(
            f"  {agent_id} ({agent['role']}): {agent['messages']} messages, "
            f"{agent['model_calls']} model calls, {usage['input_tokens']} in / "
            f"{usage['output_tokens']} out tokens"
        )
        print(f"    {_context_line(agent)}")
    if info["tasks"]:
        print("tasks")
        for line in task_tree(info["tasks"]):
            print(f"  {visible(line)}")
    _print_mailbox(info["mailbox"])
    _print_todos(info["todos"])
    _print_assessments(info["assessments"])
    _print_compactions(info["compactions"])
    print("usage")
    for line in table.splitlines():
        print(f"  {line}")
    print("last events")
    for event in info["last_events"]:
        print(f"  {event['seq']:>6}  {event['agent']:<12} {event['kind']}")
    for warning in info["warnings"]:
        print(f"warning: {visible(warning)}")
    return 0


def _print_mailbox(mailbox: list[dict[str, Any]]) -> None:
    if not mailbox:
        return
    print("mailbox")
    for mail in mailbox:
        delivered = (
            f"delivered at {mail['delivered_seq']}" if mail["delivered_seq"] else "undelivered"
        )
        print(
            f"  {mail['message_id']:>4} {mail['posted_seq']:>6} {mail['kind']:<24} "
            f"{mail['sender']} -> {mail['recipient']} ({mail['priority']}, {delivered}): "
            f"{visible(abbreviate(mail['summary'], 60))}"
        )


def _context_line(agent: dict[str, Any]) -> str:
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


def _claimed_windows(directory: Path) -> Callable[[str], Window | None]:
    """The windows known without a provider: a scripted model's, from its script's
    `window` (read as plain JSON, without the script's schema: `show` imports no model)."""
    from orchestrator.loop.compaction import Window
    from orchestrator.state.manifest import read_manifest

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


def _settings_line(settings: dict[str, Any] | None) -> str:
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


def _print_todos(lists: dict[str, dict[str, Any]]) -> None:
    """Each agent's todo list: progress, then one line per item with its blockers."""
    if not lists:
        return
    print("todos")
    for agent, todos in lists.items():
        done, total = todos["progress"]["completed"], todos["progress"]["total"]
        goal = f" · {visible(todos['goal'])}" if todos["goal"] else ""
        print(f"  {agent}: Tasks {done}/{total}{goal}")
        for item in todos["items"]:
            mark = item["status"]
            if item["blocked"] and mark == "pending":
                mark = "blocked by " + ", ".join(item["blocked_by"])
            extra = item["result"] or item["failure"]
            extra = f": {visible(abbreviate(extra, 60))}" if extra else ""
            print(f"    [{item['id']}] [{mark}] {visible(item['content'])}{extra}")


def _print_assessments(assessments: list[dict[str, Any]]) -> None:
    if not assessments:
        return
    print("assessments")
    for a in assessments:
        why = visible("; ".join(a["reasons"]))
        print(f"  {a['seq']:>6}  {a['agent']:<12} {a['action']}" + (f": {why}" if why else ""))


def _print_compactions(compactions: list[dict[str, Any]]) -> None:
    if not compactions:
        return
    print("compactions")
    for c in compactions:
        dropped = f", {c['dropped']} dropped" if c["dropped"] else ""
        print(
            f"  {c['seq']:>6}  {c['agent']:<12} {c['reason']:<8} {c['method']:<9} "
            f"{c['before']:,} → {c['after']:,} tokens, {c['pruned']} pruned{dropped}"
        )


def _repair(root: Path, session_id: str) -> int:
    from orchestrator.state.manifest import read_manifest
    from orchestrator.store import SessionLock

    directory = session_dir(root, session_id)
    read_manifest(directory)  # a session, and of a format this version reads
    with SessionLock(directory / LOCK):  # never under a running session
        for line in repair(directory, _read_only_tools()):
            print(visible(line))
    return 0


def _read_only_tools() -> frozenset[str]:
    """The names of the tools that change nothing (a repair lists the cut calls of the
    others, which resuming runs again)."""
    from orchestrator.tools import base, coordination, files, shell, todos

    return frozenset(
        tool.name
        for module in (files, shell, coordination, todos)
        for tool in vars(module).values()
        if isinstance(tool, type) and issubclass(tool, base.Tool) and tool.read_only
    )


def _transcript(root: Path, session_id: str, *, full: bool = False) -> int:
    """Every agent's live context (what its next model call would be sent), or with
    `full` its whole history from the journal: every message before each compaction
    too, and where each checkpoint made the context start again."""
    from orchestrator.session.replay import load_state

    directory = session_dir(root, session_id)
    _current(directory)
    if full:
        for agent_id, role, items in _full_history(directory):
            print(f"── {agent_id} ({role}) " + "─" * 40)
            for item in items:
                if isinstance(item, str):
                    print(f"{item}\n")
                else:
                    _print_message(item)
        return 0
    state = load_state(directory, warn=lambda text: print(f"warning: {text}", file=sys.stderr))
    for agent in state.agents.values():
        print(f"── {agent.id} ({agent.role}) " + "─" * 40)
        if agent.compactions:
            times = f"{agent.compactions} time{'' if agent.compactions == 1 else 's'}"
            print(
                f"(its live context, from its checkpoint at seq {agent.start}: compacted "
                f"{times}; --full shows everything before)\n"
            )
        for message in agent.messages:
            _print_message(message)
    return 0


def _full_history(directory: Path) -> list[tuple[str, str, list[Any]]]:
    """Each agent's id, role and every message its context ever held, in order, from
    the whole journal; a line (a `str`) where a compaction made it start again, followed
    by what the checkpoint brought (its summary and anchors; the turns it kept verbatim
    are those shown just before)."""
    from orchestrator.layout import JOURNAL
    from orchestrator.loop.anchors import HEADER
    from orchestrator.loop.compaction import ContextCompacted
    from orchestrator.messages import UserMessage
    from orchestrator.session.replay import folded, gc_paused
    from orchestrator.state.events import AgentStarted
    from orchestrator.state.fold import SessionState
    from orchestrator.store.scan import scan_journal
    from orchestrator.team.anchoring import SUMMARY_HEADER

    brought = (SUMMARY_HEADER, HEADER)  # what a checkpoint adds to the turns it keeps

    state = SessionState()
    history: dict[str, list[Any]] = {}
    shown: dict[str, int] = {}  # of each context's messages, those already in `history`
    carried: dict[str, set[str]] = {}  # the summaries and anchors in each live context
    with gc_paused():
        for seq, record in folded(state, scan_journal(directory / JOURNAL, mark=None)):
            context = state.agents.get(record.agent)
            if context is None:
                continue
            items = history.setdefault(context.id, [])
            if isinstance(record, ContextCompacted):
                items.append(_checkpoint_line(seq, record))
                kept = carried.get(context.id, set())
                new = [
                    m.content
                    for m in record.messages
                    if isinstance(m, UserMessage) and m.content.startswith(brought)
                ]
                brings = [UserMessage(content=text) for text in new if text not in kept]
                items.extend(brings or ["(its summary and anchors read as the last ones)"])
                carried[context.id] = set(new)
            elif isinstance(record, AgentStarted):
                items.extend(context.messages)
            else:
                items.extend(context.messages[shown.get(context.id, 0) :])
            shown[context.id] = len(context.messages)
    return [(a.id, a.role, history.get(a.id, [])) for a in state.agents.values()]


def _checkpoint_line(seq: int, record: Any) -> str:
    """Where a compaction made an agent's context start again, in a line."""
    why = {"fraction": "near its window", "too_long": "too long for the provider"}
    return (
        f"══ checkpoint (seq {seq}): compacted {why.get(record.reason, 'by hand')}, "
        f"{record.method}, {record.before:,} → {record.after:,} tokens, {record.pruned} tool "
        "outputs pruned; the context starts again here, from its summary and anchors ══"
    )


def _print_message(message: Any) -> None:
    from orchestrator.messages import AssistantMessage, SystemMessage, ToolResult, UserMessage

    match message:
        case SystemMessage(content=text) | UserMessage(content=text):
            print(f"[{message.role}]\n{visible(text)}\n")
        case AssistantMessage(text=text, tool_calls=calls):
            print("[assistant]" + (f"\n{visible(text)}" if text else ""))
            for call in calls:
                print(f"  → {visible(call.name)} ({call.id}) {visible(call.arguments)}")
            print()
        case ToolResult(name=name, call_id=call_id, status=status, content=text):
            print(f"[{visible(name)} {status} ({call_id})]\n{visible(text)}\n")


def _delete(root: Path, session_id: str) -> int:
    import shutil

    from orchestrator.store import SessionLock

    directory = session_dir(root, session_id)
    if not (directory / MANIFEST).exists():
        raise SessionNotFound(f"no session {session_id!r} under {root}")
    with SessionLock(directory / LOCK):  # refuses a session in use, naming its process
        shutil.rmtree(directory)
    print(f"deleted session {session_id} ({directory})")
    return 0


def run_sessions(
    args: argparse.Namespace, root: Path, load_prices: Callable[[], Mapping[str, Price]]
) -> int:
    match args.action:
        case "list":
            return _list(root, as_json=args.json)
        case "delete":
            return _delete(root, args.session_id)
        case "show" if args.transcript:
            return _transcript(root, args.session_id, full=args.full)
        case "show" if args.full:
            raise ConfigError("--full goes with --transcript (the whole history)")
        case "show":
            prices = load_prices()
            return _show(root, args.session_id, as_json=args.json, last=args.events, prices=prices)
        case "compact":
            from orchestrator.cli.compact import compact

            return compact(args, root)
        case "repair":
            return _repair(root, args.session_id)
        case "verify":
            return _verify(root, args.session_id)
    raise AssertionError(f"unhandled sessions action {args.action}")
