"""`orchestrator sessions points | fork | rewind | export | import` (docs/time-travel.md)."""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from orchestrator.cli.out import session_ref
from orchestrator.session.fork import Forked, fork, rewind
from orchestrator.session.points import session_points
from orchestrator.store.ids import session_dir
from orchestrator.text import visible

CHANGES_SHOWN = 20  # lines of a restore's changes printed; the rest counted


def time_travel(args: argparse.Namespace, root: Path) -> int:
    """`sessions points`, `fork` or `rewind`, as `args.action` says."""
    if args.action == "points":
        return points(root, args.session_id, as_json=args.json)
    if args.action == "export":
        return export(args, root)
    if args.action == "import":
        return import_file(Path(args.file), root)
    if args.action == "fork":
        return _said(fork(root, args.session_id, args.at, args.workspace), args, "forked")
    return _said(rewind(root, args.session_id, args.to), args, "rewound")


def points(root: Path, session_id: str, *, as_json: bool) -> int:
    found = session_points(session_dir(root, session_id))
    if as_json:
        for point in found:
            print(msgspec.json.encode(point).decode())
        return 0
    if not found:
        print(f"{session_id} has no points yet")
        return 0
    print(f"{'POINT':>6}  {'TIME':<19}  {'KIND':<10}  {'AGENT':<10}  SUMMARY")
    for point in found:
        when = datetime.fromtimestamp(point.at / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
        print(
            f"{point.seq:>6}  {when:<19}  {point.kind:<10}  {visible(point.agent)[:10]:<10}  "
            f"{point.summary}"
        )
    return 0


def _said(made: Forked, args: argparse.Namespace, verb: str) -> int:
    if made.finished:
        print(f"finished the restore of {made.session_id}, a fork a kill had cut short")
    else:
        print(f"{verb} {made.parent} at point {made.point}: new session {made.session_id}")
    if made.tree:
        print(f"workspace {made.workspace} is checkpoint {made.tree[:12]}")
    for what, path in made.changes[:CHANGES_SHOWN]:
        word = {"A": "restored", "M": "overwritten", "D": "removed"}.get(what, what)
        print(f"  {word:<11} {visible(path)}")
    if len(made.changes) > CHANGES_SHOWN:
        print(f"  ... and {len(made.changes) - CHANGES_SHOWN} more")
    print(
        f"the previous path stays session {made.parent}; go on with: orchestrator resume "
        f"{session_ref(made.session_id, args)} [--message TEXT]"
    )
    return 0


def export(args: argparse.Namespace, root: Path) -> int:
    """`sessions export`: the bundle (json), or the report, every agent's whole
    transcript and the plan (md), to `--output` or stdout."""
    directory = session_dir(root, args.session_id)
    if args.format == "json":
        from orchestrator.session.bundle import export_bundle

        data = export_bundle(directory, with_files=args.with_files)
        if args.with_files:
            print(
                "note: the workspace's files are in the bundle as they are, not redacted "
                "(a .env that .gitignore does not name is in them)",
                file=sys.stderr,
            )
    else:
        data = _markdown(args, root, directory).encode()
    if args.output:
        Path(args.output).write_bytes(data)
        print(f"exported {args.session_id} to {args.output}", file=sys.stderr)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return 0


def _markdown(args: argparse.Namespace, root: Path, directory: Path) -> str:
    from orchestrator.cli.transcript import transcript
    from orchestrator.session.report import read_report
    from orchestrator.session.report_text import report_text

    data = read_report(directory, 10, {}, None, lambda text: None, None)
    report = report_text(data, session_ref(args.session_id, args))
    told = io.StringIO()
    with contextlib.redirect_stdout(told):
        transcript(root, args.session_id, full=True)
    parts = [f"# Session {args.session_id}\n", "```\n" + report + "```\n"]
    parts.append("## Transcript\n\n```\n" + told.getvalue() + "```\n")
    plan = directory / "plan.md"
    if plan.exists():
        parts.append("## Plan\n\n" + plan.read_text())
    return "\n".join(parts)


def import_file(path: Path, root: Path) -> int:
    from orchestrator.session.bundle import import_bundle

    made = import_bundle(root, path.read_bytes())
    why = " (its own id was taken)" if made.renamed else ""
    print(f"imported session {made.session_id}{why}; workspace {made.workspace}")
    return 0
