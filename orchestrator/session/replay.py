"""Reading a session back: the snapshot's small state, then one pass over the journal from
where the agents' contexts start, each line parsed and validated once and folded once.

No trio here: `sessions show` and `sessions verify` read sessions without an event loop.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import msgspec
import orjson

from orchestrator.errors import JournalCorrupt, SessionError
from orchestrator.layout import JOURNAL as JOURNAL
from orchestrator.layout import SNAPSHOT as SNAPSHOT
from orchestrator.state.context import CONTEXT_FOLDS, FoldError
from orchestrator.state.events import Record, record_decoder
from orchestrator.state.fold import SNAPSHOT_LAYOUT, SessionState
from orchestrator.state.mailbox import Mail, MailHistory
from orchestrator.state.snapshot import Snapshot, decode_snapshot
from orchestrator.store.scan import JournalScan, scan_journal


def decode_records(
    path: Path, lines: Iterable[bytes], first_seq: int
) -> Iterator[tuple[int, Record]]:
    """Journal lines (checked by the store, the first being `first_seq`) as typed records,
    each line parsed and validated in one step; a line that does not fit its kind's
    schema is corruption, named by file and seq."""
    decode = record_decoder().decode
    for seq, line in enumerate(lines, first_seq):
        try:
            record = decode(line)
        except msgspec.DecodeError as exc:
            raise _schema_error(path, seq, exc) from exc
        yield seq, record


def fold_records(state: SessionState, scan: JournalScan, *, snapshot_seq: int = 0) -> None:
    """Fold the scanned records into `state`: records up to `snapshot_seq` rebuild
    contexts only (the small state is the snapshot's), later ones are folded whole.

    This is most of a resume's time, once per record: the scan's head is decoded in one
    call, and a plain loop for each part (up to the snapshot's seq, then after it) folds,
    with no generator or helper between a record and its fold (`folded` is the same
    fold, for readers of the records)."""
    path = scan.path
    apply, agents, context_folds = state.apply, state.agents, CONTEXT_FOLDS
    records = itertools.chain(_decode_head(scan), map(record_decoder().decode, scan.tail))
    seq, first = scan.after_seq, scan.after_seq + 1  # `seq`: the last record taken
    before = max(snapshot_seq - scan.after_seq, 0)  # records up to the snapshot's seq
    try:
        # Up to the snapshot's seq, only what an agent's live context holds matters
        # (`sessions verify` folds everything from the start).
        for seq, record in enumerate(itertools.islice(records, before), first):
            agent = agents.get(record.agent)
            if agent is not None and seq >= agent.start:
                fold = context_folds.get(type(record))
                if fold is not None:
                    fold(agent, seq, record)
        for seq, record in enumerate(records, first + before):
            apply(seq, record)
    except msgspec.DecodeError as exc:
        raise _schema_error(path, seq + 1, exc) from exc
    except FoldError as exc:
        raise _fold_error(path, seq, exc) from exc


def _decode_head(scan: JournalScan) -> list[Record]:
    """The records of the scan's head, decoded in one call; a line that does not fit is
    found again line by line, to name its seq."""
    if not scan.head:
        return []
    try:
        records: list[Record] = record_decoder().decode_lines(scan.head)
    except msgspec.DecodeError:
        for seq, line in enumerate(bytes(scan.head).split(b"\n")[:-1], scan.after_seq + 1):
            try:
                record_decoder().decode(line)
            except msgspec.DecodeError as exc:
                raise _schema_error(scan.path, seq, exc) from exc
        raise  # every line decodes alone: never, short of a bug in the decoder
    return records


def folded(
    state: SessionState, scan: JournalScan, *, snapshot_seq: int = 0
) -> Iterator[tuple[int, Record]]:
    """Each scanned record, once folded into `state` (as `fold_records` folds it), for
    readers that want the records too (`sessions show` sums usage from them). A record
    that does not fold is corruption, named by file and seq."""
    path = scan.path
    apply, apply_context, agents = state.apply, state.apply_context, state.agents
    for seq, record in decode_records(path, scan.lines, scan.after_seq + 1):
        try:
            if seq > snapshot_seq:
                apply(seq, record)
            else:
                agent = agents.get(record.agent)
                if agent is not None and seq >= agent.start:
                    apply_context(seq, record)
        except FoldError as exc:
            raise _fold_error(path, seq, exc) from exc
        yield seq, record


def _schema_error(path: Path, seq: int, exc: msgspec.DecodeError) -> JournalCorrupt:
    return JournalCorrupt(
        f"{path}: record seq {seq} does not match its schema: {exc}", path=path, line=seq, seq=seq
    )


def _fold_error(path: Path, seq: int, exc: FoldError) -> JournalCorrupt:
    return JournalCorrupt(f"{path}: record seq {seq}: {exc}", path=path, line=seq, seq=seq)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Folding builds hundreds of thousands of small objects and no cycles; the cyclic
    garbage collector would rescan them all on every generation-2 pass (5x slower)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_state(directory: Path | str, *, warn: Callable[[str], None] | None = None) -> SessionState:
    """The snapshot's small state, then the journal from where the contexts start.
    `warn` hears what was repaired on the way (a torn tail cut, a stale snapshot);
    without it, each is a `RuntimeWarning`."""
    return load(Path(directory), warn or _warning)[0]


def _warning(text: str) -> None:
    warnings.warn(text, RuntimeWarning, stacklevel=3)


def lost_records_advice(directory: Path) -> str:
    """What to tell a person whose session's journal lost records it had."""
    where = f"{directory.name} --sessions-dir {directory.parent}"
    return (
        "Resuming would run the lost part again and repeat its side effects, so it is "
        f"refused. See what is there with `orchestrator sessions verify {where}`; if the "
        f"journal cannot be restored and what it holds is to be kept, `orchestrator sessions "
        f"repair {where}` accepts the loss so the session resumes from its last record."
    )


def read_snapshot(directory: Path, warn: Callable[[str], None]) -> Snapshot | None:
    return read_snapshot_seq(directory, warn)[0]


def read_snapshot_seq(directory: Path, warn: Callable[[str], None]) -> tuple[Snapshot | None, int]:
    """The snapshot (None if there is none, or it cannot be read), and the seq that a
    sound snapshot names even when it is of another layout, which is not read (a snapshot
    is derived data: the journal has it all) but still says how far the session got."""
    path = directory / SNAPSHOT
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, 0
    except OSError as exc:
        warn(f"ignored unreadable snapshot {path}: {exc}; replaying the whole journal")
        return None, 0
    try:
        snapshot = decode_snapshot(data)
    except msgspec.DecodeError as exc:
        seq = _other_layout_seq(data)
        if seq is None:
            warn(f"ignored unreadable snapshot {path}: {exc}; replaying the journal")
        return None, seq or 0
    return snapshot, snapshot.seq


def _other_layout_seq(data: bytes) -> int | None:
    """The seq a snapshot that does not validate names, if it is of another layout."""
    try:
        fields = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(fields, dict) or fields.get("layout") == SNAPSHOT_LAYOUT:
        return None
    seq = fields.get("seq")
    return seq if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0 else None


def mail_history(directory: Path) -> list[Mail]:
    """Every message of a session, delivered and answered ones included, read back from
    its whole journal (the live state keeps only the mail that still needs something)."""
    history = MailHistory()
    with gc_paused():
        scan = scan_journal(directory / JOURNAL)
        for seq, record in decode_records(scan.path, scan.lines, scan.after_seq + 1):
            history.apply(seq, record)
    return list(history.messages.values())


def load(directory: Path, warn: Callable[[str], None]) -> tuple[SessionState, JournalScan]:
    """The state, and the scan of the journal (which opening it for appending reuses)."""
    path = directory / JOURNAL
    with gc_paused():
        snapshot, reached = read_snapshot_seq(directory, warn)
        state = SessionState() if snapshot is None else SessionState.from_snapshot(snapshot)
        mark = None if snapshot is None else snapshot.journal
        start = state.context_start_mark() if mark is not None else None
        scan = scan_journal(path, after_seq=state.context_start() - 1, mark=mark, start=start)
        if scan.cut is not None:
            warn(f"cut a torn tail from {path}: {scan.cut.describe()}")
        if reached > scan.last_seq:
            raise SessionError(
                f"{directory / SNAPSHOT} reflects seq {reached} but {path} holds only "
                f"{scan.last_seq} records: the journal lost records the session had made "
                f"progress with. {lost_records_advice(directory)}"
            )
        fold_records(state, scan, snapshot_seq=state.seq)
    return state, scan
