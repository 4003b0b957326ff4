"""Checking and mending a session on disk: `verify` reads every record (frame, checksum,
schema, fold) and compares the snapshot with the fold; `repair` cuts a corrupt journal
back to its last good batch and accepts a loss it cannot undo. What `sessions verify`
and `sessions repair` run."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import msgspec
import orjson

from orchestrator.errors import JournalCorrupt
from orchestrator.state.snapshot import Snapshot


def verify(directory: Path) -> list[str]:
    """Check every record of a session (frame, checksum, schema, and that it folds),
    and that the snapshot agrees with the fold at the seq it names; the problems found,
    or none."""
    from orchestrator.session.replay import JOURNAL, SNAPSHOT, folded, gc_paused, read_snapshot_seq
    from orchestrator.state.fold import SessionState
    from orchestrator.store import scan_journal
    from orchestrator.store.scan import holds

    path = directory / JOURNAL
    problems: list[str] = []
    snapshot, reached = read_snapshot_seq(directory, problems.append)
    state = SessionState()
    checked = snapshot is None

    def compare(seq: int) -> None:
        if snapshot is None:
            return
        # Where each context starts in the file is the writer's to know, not the fold's:
        # compared apart, against the file.
        if _unmarked(snapshot) != _unmarked(state.snapshot(journal=snapshot.journal)):
            where = directory / SNAPSHOT
            problems.append(f"{where} does not match the journal folded to seq {seq}")
        problems.extend(_start_marks(directory / SNAPSHOT, snapshot, path.read_bytes()))
        mark = snapshot.journal
        if mark is not None and (mark.seq != seq or not holds(path.read_bytes(), mark)):
            problems.append(
                f"{directory / SNAPSHOT} marks the journal as {list(mark)} (seq, length, "
                "CRC-32), which it does not hold: a resume checks every line instead"
            )

    if snapshot is not None and snapshot.seq == 0:
        checked = True
        compare(0)
    try:
        with gc_paused():
            scan = scan_journal(path)
            for seq, _ in folded(state, scan):
                if snapshot is not None and seq == snapshot.seq:
                    checked = True
                    compare(seq)
    except JournalCorrupt as exc:
        return [*problems, str(exc)]
    if scan.cut is not None:
        problems.append(f"{path} ends in a torn tail, cut on the next resume: {scan.cut}")
    if (not checked and snapshot is not None) or reached > state.seq:
        problems.append(
            f"{directory / SNAPSHOT} names seq {reached}, past the journal's last "
            f"record {state.seq}"
        )
    return problems


def repair(directory: Path, read_only: Collection[str] = ()) -> list[str]:
    """Cut a corrupt journal back to its last good batch, then, if the session had got
    further than the journal now goes (a lost or cut journal), accept the loss: the
    snapshot that is ahead is moved aside and the manifest's mark lowered, so the session
    resumes from the journal's last record. Nothing is deleted. What was done, in lines,
    with the calls that resuming will run again (the tools not in `read_only` named)."""
    from datetime import UTC, datetime

    from msgspec import structs

    from orchestrator.session.replay import JOURNAL, SNAPSHOT, read_snapshot_seq
    from orchestrator.session.status import reconcile
    from orchestrator.state.manifest import read_manifest, write_manifest
    from orchestrator.store import repair_journal, scan_journal

    journal = directory / JOURNAL
    before = journal.read_bytes() if journal.exists() else b""
    if journal.exists():
        done = [repair_journal(journal).describe()]
        unreadable = _cut_unreadable(journal)
        if unreadable is not None:
            done.append(unreadable)
    else:
        journal.touch(mode=0o600)
        done = [f"{journal} was missing: an empty journal is in its place"]
    last = scan_journal(directory / JOURNAL).last_seq
    _, reached = read_snapshot_seq(directory, warn=lambda _: None)
    if reached > last:
        aside = directory / f"{SNAPSHOT}.ahead-{datetime.now(UTC):%Y%m%dT%H%M%S}"
        (directory / SNAPSHOT).rename(aside)
        done.append(
            f"the snapshot reflected seq {reached}, past the journal's {last}: moved to "
            f"{aside}; the session resumes from seq {last}, and work after that may be done again"
        )
    manifest = read_manifest(directory)
    if manifest.journal_seq > last:
        write_manifest(directory, structs.replace(manifest, journal_seq=last))
        done.append(
            f"the session had reached seq {manifest.journal_seq}; it now resumes from seq "
            f"{last}, and work after that may be done again"
        )
    done.extend(rerun_note(before, last, read_only))
    reconcile(directory)  # the manifest's status is the cut journal's
    return done


def rerun_note(before: bytes, last: int, read_only: Collection[str]) -> list[str]:
    """What resuming after a cut at seq `last` will do again, said from the journal's
    bytes `before` the cut: the calls whose reply, start or result was cut run again
    (a cut reply is asked of the model again), and those that change things are listed."""
    calls: dict[str, dict[str, Any]] = {}  # ref -> the call, from every reply
    cut: list[str] = []
    for line in before.split(b"\n"):
        try:
            fields = orjson.loads(line)
            seq, kind = fields["seq"], fields["k"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            continue  # a torn or corrupt line: what it held is not known
        if kind == "assistant_replied":
            for index, call in enumerate(fields.get("message", {}).get("tool_calls", [])):
                calls[f"{seq}.{index}"] = call
                if seq > last:
                    cut.append(f"{seq}.{index}")
        elif kind in ("call_started", "call_result") and seq > last:
            cut.append(str(fields.get("ref")))
    refs = [ref for ref in dict.fromkeys(cut) if ref in calls]
    if not refs:
        return []
    changing = [ref for ref in refs if calls[ref].get("name") not in read_only]
    lines = [
        f"resuming goes on from seq {last}: the {len(refs)} tool calls cut after it run "
        "again (a cut reply is asked of the model again, and its calls with it)"
    ]
    if changing:
        lines.append(
            f"{len(changing)} of them change things (their tools are not read-only), and "
            "what they did may be done twice; check the workspace before resuming:"
        )
        lines += [f"  {ref} {_call_line(calls[ref])}" for ref in changing]
    return lines


def _call_line(call: dict[str, Any]) -> str:
    arguments = str(call.get("arguments", ""))
    if len(arguments) > 100:
        arguments = arguments[:99] + "…"
    return f"{call.get('name')} {arguments}"


def _cut_unreadable(journal: Path) -> str | None:
    """Cut the journal before the first record whose checksum is good but which does not
    fit its schema or does not fold (written by another version, or by hand), keeping
    whole batches and the original aside; what was done, or None."""
    from orchestrator.state.context import FoldError
    from orchestrator.state.events import decode_record
    from orchestrator.state.fold import SessionState
    from orchestrator.store._line import CRC_SUFFIX_LEN, MORE
    from orchestrator.store.repair import cut_journal

    data = journal.read_bytes()
    state = SessionState()
    offset = batch_end = 0
    last_whole = 0
    for seq, line in enumerate(data.split(b"\n")[:-1], start=1):
        try:
            state.apply(seq, decode_record(line))
        except (ValueError, FoldError) as exc:  # msgspec.DecodeError is a ValueError
            reason = f"record seq {seq} does not fit this version ({exc})"
            report = cut_journal(journal, data, batch_end, last_whole, reason)
            return report.describe().splitlines()[0]
        offset += len(line) + 1
        if not line.endswith(MORE, 0, len(line) - CRC_SUFFIX_LEN):
            batch_end, last_whole = offset, seq
    return None


def _start_marks(where: Path, snapshot: Snapshot, journal: bytes) -> list[str]:
    """What is wrong with the snapshot's marks of where each context starts in the file
    (a resume reads from there): each must be the journal's just before that seq."""
    from orchestrator.store.scan import holds

    return [
        f"{where} marks where {agent}'s context starts as {list(start)}, which the journal "
        "does not hold: a resume reads it all"
        for agent, summary in snapshot.agents.items()
        if (start := summary.start_mark) is not None
        and (start.seq != summary.start - 1 or not holds(journal, start))
    ]


def _unmarked(snapshot: Snapshot) -> Snapshot:
    """`snapshot` without the marks of where its contexts start in the file."""
    agents = {
        agent: msgspec.structs.replace(summary, start_mark=None)
        for agent, summary in snapshot.agents.items()
    }
    return msgspec.structs.replace(snapshot, agents=agents)
