"""`orchestrator sessions list | show | verify | repair | delete` (and `compact`, in
compact.py, and `watch`, in watch.py): look after sessions without running them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from orchestrator.errors import ConfigError, SessionNotFound
from orchestrator.layout import LOCK, MANIFEST
from orchestrator.session.check import repair, verify
from orchestrator.session.listing import SessionInfo, list_sessions
from orchestrator.store.ids import session_dir
from orchestrator.text import abbreviate, visible

if TYPE_CHECKING:
    from orchestrator.usage import Price

# Folding journals (and pydantic, which verify and repair may need) is imported by the
# commands that need it, so that `sessions list` (and `show`, from a snapshot) starts
# without it.


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError


def _list(root: Path, *, as_json: bool = False) -> int:
    sessions = list_sessions(root)
    if as_json:
        for info in sessions:
            print(orjson.dumps(_entry(info)).decode())
        return 0
    if not sessions:
        print(f"no sessions under {root}")
        return 0
    print(f"{'ID':<24} {'CREATED':<25} {'STATUS':<20} {'SIZE':>9}  GOAL")
    for info in sessions:
        if info.error:
            print(f"{info.id:<24} unreadable: {visible(info.error)}")
            continue
        print(
            f"{info.id:<24} {info.created.isoformat(timespec='seconds'):<25} {info.status:<20} "
            f"{_human(info.size):>9}  {visible(abbreviate(info.goal, 60))}"
        )
    return 0


def _entry(info: SessionInfo) -> dict[str, Any]:
    """A line of `sessions list --json`: the session, or its id and why it is unreadable."""
    if info.error:
        return {"id": info.id, "error": info.error}
    return {
        "id": info.id,
        "created": info.created.isoformat(),
        "status": info.status,
        "resumable": info.resumable,
        "size": info.size,
        "goal": info.goal,
        "model": info.model,
        "workspace": str(info.workspace),
    }


def _current(directory: Path) -> None:
    """Migrate a session of an older format first (under its lock), saying so: the
    commands that read journals read only the current format."""
    from orchestrator.session.migrations import bring_up_to_date

    bring_up_to_date(directory, _note)


def _note(text: str) -> None:
    print(f"note: {text}", file=sys.stderr)


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
    from orchestrator.session.inspection import session_report

    report = session_report(root, session_id, prices, last=last, warn=_note)
    sys.stdout.write(report.to_json() if as_json else report.text())
    return 0


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
        case "watch":
            from orchestrator.cli.watch import watch

            return watch(args, root, load_prices)
        case "repair":
            return _repair(root, args.session_id)
        case "verify":
            return _verify(root, args.session_id)
    raise AssertionError(f"unhandled sessions action {args.action}")
