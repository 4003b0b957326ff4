"""`orchestrator sessions list | show | verify | repair | delete` (and `compact`, in
compact.py, `watch`, in watch.py, and `points`, `fork` and `rewind`, in timetravel.py):
look after sessions without running them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from orchestrator.cli.out import session_ref
from orchestrator.errors import ConfigError, SessionNotFound
from orchestrator.layout import LOCK, MANIFEST
from orchestrator.session.listing import SessionInfo, find_session, list_sessions
from orchestrator.store.ids import session_dir
from orchestrator.text import abbreviate, visible

if TYPE_CHECKING:
    from orchestrator.prices.cost import Price
    from orchestrator.session.on_workers import WorkerRecords, WorkersReader
    from orchestrator.state.settings import SessionSettings

# Folding journals (and pydantic, which verify and repair may need) is imported by the
# commands that need it, so that `sessions list` (and `show`, from a snapshot) starts
# without it: `verify` and `repair` too (session/check.py reads snapshots, whose types
# import every record's).


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
        "output": info.output,
    }


def _current(directory: Path) -> None:
    """Migrate a session of an older format first (under its lock), saying so: the
    commands that read journals read only the current format."""
    from orchestrator.session.migrations import bring_up_to_date

    bring_up_to_date(directory, _note)


def _note(text: str) -> None:
    print(f"note: {text}", file=sys.stderr)


def _verify(root: Path, session_id: str) -> int:
    from orchestrator.session.check import verify

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
    root: Path,
    session_id: str,
    *,
    as_json: bool,
    last: int,
    prices: Mapping[str, Price],
    workers: WorkersReader,
    ref: str,
) -> int:
    # The report's data, printed as `SessionReport.text()` and `to_json()` print it,
    # without building that typed view (and importing each of its types) first.
    from orchestrator.session.report import read_report
    from orchestrator.session.report_text import report_json, report_text

    data = read_report(session_dir(root, session_id), last, prices, None, _note, workers)
    sys.stdout.write(report_json(data) if as_json else report_text(data, ref))
    return 0


def _workers_reader(args: argparse.Namespace) -> WorkersReader:
    """Reads the records of a session's tasks on workers from the engine's database:
    `--database-url`, else `[engine] database_url`, else the journaled one (the config
    is loaded only for a session on workers)."""

    def read(session_id: str, settings: SessionSettings) -> WorkerRecords:
        from orchestrator.cli.engine import session_database
        from orchestrator.cli.env import load_user_config
        from orchestrator.engine.shown import read_worker_records
        from orchestrator.session.on_workers import WorkerRecords

        try:
            url = session_database(settings, args, load_user_config(args))
        except ConfigError as exc:
            return WorkerRecords(database=settings.engine_database, unread=str(exc))
        if not url:
            return WorkerRecords(unread="no database journaled: give --database-url URL")
        return read_worker_records(url, session_id)

    return read


def _repair(root: Path, session_id: str) -> int:
    from orchestrator.session.check import repair
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
    from orchestrator.tools import base, coordination, files, search, shell, todos

    return frozenset(
        tool.name
        for module in (files, search, shell, coordination, todos)
        for tool in vars(module).values()
        if isinstance(tool, type) and issubclass(tool, base.Tool) and tool.read_only
    )


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
    if args.action not in ("list", "watch", "import"):  # (watch finds its own, after its checks)
        # An id, the start of one, or --last: the one session meant, named in full.
        args.session_id = find_session(root, args.session_id, last=getattr(args, "last", False))
    match args.action:
        case "list":
            return _list(root, as_json=args.json)
        case "delete":
            return _delete(root, args.session_id)
        case "show" if args.transcript:
            from orchestrator.cli.transcript import transcript

            return transcript(
                root, args.session_id, full=args.full, workers=_workers_reader(args), warn=_note
            )
        case "show" if args.full:
            raise ConfigError("--full goes with --transcript (the whole history)")
        case "show":
            prices = load_prices()
            return _show(
                root,
                args.session_id,
                as_json=args.json,
                last=args.events,
                prices=prices,
                workers=_workers_reader(args),
                ref=session_ref(args.session_id, args),
            )
        case "compact":
            from orchestrator.cli.compact import compact

            return compact(args, root)
        case "watch":
            from orchestrator.cli.watch import watch

            return watch(args, root, load_prices)
        case "points" | "fork" | "rewind" | "export" | "import":
            from orchestrator.cli.timetravel import time_travel

            return time_travel(args, root)
        case "repair":
            return _repair(root, args.session_id)
        case "verify":
            return _verify(root, args.session_id)
    raise AssertionError(f"unhandled sessions action {args.action}")
