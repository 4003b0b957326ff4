"""Migrations of the session format, one named step per version, kept forever.

`MIGRATIONS[n]` rewrites a session directory of format n into format n + 1; the recorded
session of each old format under `sessions/` is its test. A step must be safe to run again
after a crash part-way through it: the session's manifest names the new format only once
the step has returned.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import orjson
from msgspec import ValidationError, convert

from orchestrator.errors import JournalCorrupt, SessionError
from orchestrator.layout import JOURNAL, LOCK, MANIFEST, SNAPSHOT
from orchestrator.messages import AssistantMessage, ToolCall, ToolResult
from orchestrator.state.events import (
    AgentStarted,
    AssistantReplied,
    CallResult,
    EffectStarted,
    MessageAdded,
    Record,
    SessionStatusChanged,
    TurnEnded,
    TurnStarted,
)
from orchestrator.state.mailbox import MAIN
from orchestrator.state.manifest import FORMAT_VERSION, Manifest, read_manifest, write_manifest
from orchestrator.state.settings import SessionSettings, SettingsChosen
from orchestrator.store import SessionLock, read_json, scan_journal, write_atomic
from orchestrator.store._fs import sync_dir
from orchestrator.store._line import encode
from orchestrator.store.append import append_batch

Migration = Callable[[Path], None]


def _v1_records(data: bytes, path: Path) -> Iterator[tuple[float, dict[str, Any]]]:
    """(time, record) of each whole batch of a format-1 journal, in order. A format-1
    line is `{"seq","time","kind","agent","body","end","crc"}`, checksummed like today's.
    A torn last line is dropped, as resume would have cut it; damage anywhere else stops
    the migration."""
    lines = data.split(b"\n")
    batch: list[tuple[float, dict[str, Any]]] = []
    for number, line in enumerate(lines, start=1):
        if not line:
            continue
        last = number >= len(lines) - 1
        try:
            good = b"%08x" % zlib.crc32(line[:-18]) == line[-10:-2]
            fields = orjson.loads(line) if good else None
        except orjson.JSONDecodeError:
            fields = None
        if not isinstance(fields, dict) or fields.get("seq") != number:
            if last:
                return
            raise JournalCorrupt(
                f"{path} line {number} is damaged; it cannot be migrated from session "
                "format 1. The original journal is kept as journal.v1.jsonl.",
                path=path,
                line=number,
            )
        batch.append((fields["time"], fields))
        if fields.get("end", True):
            yield from batch
            batch = []


def _v1_to_v2_records(records: Iterator[tuple[float, dict[str, Any]]]) -> Iterator[bytes]:
    """Format-1 records as format-2 lines (each a batch of one)."""
    # agent -> provider call id -> refs of the last reply (a reply may repeat an id: its
    # results then answer them in order)
    refs: dict[str, dict[str, list[str]]] = {}
    seq = 0
    for time, fields in records:
        kind, agent, body = fields["kind"], fields["agent"], fields["body"]
        record: Record | None
        match kind:
            case "agent_started":
                record = convert({**body, "a": agent}, AgentStarted)
            case "message_added":
                record = convert({**body, "a": agent}, MessageAdded)
            case "turn_started":
                record = TurnStarted(agent=agent)
            case "assistant_replied":
                record = AssistantReplied(
                    agent=agent,
                    message=convert(body["message"], AssistantMessage),
                    model=body.get("model", ""),
                )
                refs[agent] = {}
                for index, call in enumerate(record.message.tool_calls):
                    refs[agent].setdefault(call.id, []).append(f"{seq + 1}.{index}")
            case "tool_call_started":
                call = convert(body["call"], ToolCall)
                record = (
                    None
                    if body["idempotent"]
                    else EffectStarted(agent=agent, ref=refs[agent][call.id][0])
                )
            case "tool_call_finished":
                result = convert(body["result"], ToolResult)
                record = CallResult(
                    agent=agent,
                    ref=refs[agent][result.call_id].pop(0),
                    status=result.status,
                    content=result.content,
                )
            case "turn_ended":
                record = convert({**body, "a": agent}, TurnEnded)
            case "session_status":
                record = convert({**body, "a": agent}, SessionStatusChanged)
            case _:
                raise ValueError(f"unknown format-1 record kind {kind!r}")
        if record is not None:
            seq += 1
            yield encode(
                seq, round(time * 1000), record.kind, agent, record.journal_body(), end=True
            )


def v1_to_v2(directory: Path) -> None:
    """Format 2 keys tool calls by ref, journals only the starts of side effects, leaves
    defaults out, and snapshots positions instead of contexts. The journal is rewritten
    (the original stays beside it as `journal.v1.jsonl`) and the old snapshot removed."""
    journal = directory / "journal.jsonl"
    original = directory / "journal.v1.jsonl"
    if not original.exists():
        if not journal.exists():
            return  # a session that never wrote a record
        os.link(journal, original)
        sync_dir(directory)
    data = original.read_bytes()
    try:
        lines = list(_v1_to_v2_records(_v1_records(data, original)))
    except (KeyError, ValueError) as exc:  # msgspec.DecodeError is a ValueError
        raise JournalCorrupt(
            f"{original}: cannot migrate from session format 1: {exc!r}", path=original
        ) from exc
    write_atomic(journal, b"".join(lines))
    (directory / "snapshot.json").unlink(missing_ok=True)


def v2_to_v3(directory: Path) -> None:
    """Format 3 adds the task and mailbox records (`task_created`, `task_changed`,
    `message_posted`, `messages_delivered`), a `delivers` field on call results, the
    turn-end reason `yielded`, and the registry and mailbox in the snapshot. Every
    format-2 record and snapshot is already a valid format-3 one: nothing to rewrite."""
    return None


def v3_to_v4(directory: Path) -> None:
    """Format 4 adds the todo and assessment records (`todos_changed`, `assessed`,
    `verified`, `blocked_reported`), the session statuses `blocked` and
    `budget_exhausted`, and to the snapshot the todo lists, each agent's assessment
    progress and the session's round and usage counters. Every format-3 record is a valid
    format-4 one; a format-3 snapshot lacks the counters, so it is removed (it is derived
    data): the first resume folds the whole journal and writes a format-4 one."""
    with contextlib.suppress(FileNotFoundError):
        (directory / SNAPSHOT).unlink()
        sync_dir(directory)


_FLAG_KEYS = {"budget_time": "budget_wall"}  # a format-4 flag named apart from its setting


def v4_to_v5(directory: Path) -> None:
    """Format 5 journals the settings a session runs with, as a `settings` record, in
    place of the manifest's `flags` (what `run` was given, which `resume` re-applied, but
    which the demo and library callers never wrote). A format-4 session with flags gets
    them as a `settings` record (the defaults, with the flags over them) appended to its
    journal; one without gets its settings when it next runs, from the command or program
    that continues it. The manifest is written without `flags` once the step returns."""
    raw = read_json(directory / MANIFEST)
    flags = raw.get("flags") if isinstance(raw, dict) else None
    if not flags:
        return
    journal = directory / JOURNAL
    last = scan_journal(journal).records[-1:]
    if last and last[0].parsed().kind == "settings":
        return  # this step ran before a crash, up to the manifest
    try:
        settings = convert(
            {_FLAG_KEYS.get(key, key): value for key, value in flags.items()}, SessionSettings
        )
    except (ValidationError, TypeError) as exc:
        raise SessionError(
            f"{directory / MANIFEST}: its flags are not session settings ({exc}); "
            "remove `flags` from it to resume the session with the configured settings"
        ) from None
    record = SettingsChosen(agent=MAIN, settings=settings, source="migrated")
    append_batch(journal, [(record.kind, record.agent, record.journal_body())])


def v5_to_v6(directory: Path) -> None:
    """Format 6 adds the result status `unapproved` (a call refused for want of anyone to
    ask), `changed` on call results (what a call changed, as a fact), `park_limit` in the
    settings record, the manifest's `journal_size`, and the calls refused since the
    person last spoke in the snapshot. Every format-5 record, manifest and snapshot is
    already a valid format-6 one: nothing to rewrite. The step lets the manifest say 6,
    so an older orchestrator refuses the session instead of misreading its records."""
    return None


def v6_to_v7(directory: Path) -> None:
    """Format 7 adds the `context_compacted` record (a checkpoint: an agent's live context
    starts again from its messages), `ref` on the results a checkpoint holds, and the
    snapshot's compaction counters, breaker and learned context windows. Every format-6
    record, manifest and snapshot is already a valid format-7 one: nothing to rewrite. The
    step lets the manifest say 7, so an older orchestrator refuses the session instead of
    failing on a record kind it does not know."""
    return None


def v7_to_v8(directory: Path) -> None:
    """Format 8 adds plans and task dependencies: the `plan_submitted`, `plan_decided`
    and `replan_requested` records, `after`, `after_plan`, `serialise` and `state` on
    `task_created` and the state `waiting_deps`, `dependency` on `task_changed`,
    `plan_version` on `todos_changed` and `plan_task` on its items, `plan` in the
    settings, and `plans` in the snapshot. Every format-7 record, manifest and snapshot is
    already a valid format-8 one: nothing to rewrite. The step lets the manifest say 8, so
    an older orchestrator refuses the session instead of failing on a record it does not
    know."""
    return None


def v8_to_v9(directory: Path) -> None:
    """Format 9 adds calls in the background: `task_kind` (`tool`) and `output` (the file
    under `tasks/` that holds the call's output) on `task_created`, so a task may be a
    call's rather than a subagent's; `kind` and `output` on the snapshot's task records;
    and the `background_*` settings in the `settings` record. Every format-8 record,
    manifest and snapshot is already a valid format-9 one (every task a subagent's), and a
    format-8 `settings` record reads with the new settings at their defaults, as the
    settings added by earlier formats did (`park_limit`, the compaction keys, `plan`): a
    format-8 session has no background call those settings could have governed. Nothing
    is rewritten; the step lets the manifest say 9, so an older orchestrator refuses the
    session instead of failing on the settings it does not know (`SessionSettings`
    forbids unknown fields)."""
    return None


def v9_to_v10(directory: Path) -> None:
    """Format 10 journals where a session's tasks run: the `engine` and
    `engine_database` settings in the `settings` record, and `ran_on` (where a run of a
    task ran) on `task_changed` and on the snapshot's task records. Every format-9
    record, manifest and snapshot is already a valid format-10 one: a format-9 `settings`
    record reads with the local engine, which is where a resume without `--engine` ran
    its tasks until now, and a task record without `ran_on` says nothing of where it
    ran. Nothing is rewritten; the step lets the manifest say 10, so an older
    orchestrator refuses the session instead of failing on the settings it does not know
    (`SessionSettings` forbids unknown fields)."""
    return None


def v10_to_v11(directory: Path) -> None:
    """Format 11 journals the shell's sandbox and the plan's approval given in advance:
    `sandbox` and `network`, `approve` and `approve_through` in the `settings` record.
    Every format-10 record, manifest and snapshot is already a valid format-11 one: a
    format-10 `settings` record reads with `sandbox` and `network` unset (None: each run
    takes them from its flags and config, as a resume always did, until a resume's
    `--sandbox` or `--network` journals one) and no approval given in advance (`approve`
    ""), which a format-10 session never journaled: a resume gives `--approve` again, as
    it had to. Nothing is rewritten; the step lets the manifest say 11, so an older
    orchestrator refuses the session instead of failing on the settings it does not know
    (`SessionSettings` forbids unknown fields)."""
    return None


def v11_to_v12(directory: Path) -> None:
    """Format 12 adds deferred approvals and the answer in the manifest: the
    `approval_parked` and `approval_decided` records (a call parked for a person's
    decision, and that decision, journaled before the call runs), `approvals` in the
    snapshot, and the manifest's `output` (the main agent's last reply with text). Every
    format-11 record, manifest and snapshot is already a valid format-12 one: a format-11
    session parked no call, and its manifest reads with `output` "" until its next run
    ends and writes it. Nothing is rewritten; the step lets the manifest say 12, so an
    older orchestrator refuses the session instead of failing on a record kind it does
    not know."""
    return None


def v12_to_v13(directory: Path) -> None:
    """Format 13 adds fallback chains and recovery from cut replies: the
    `model_switched` record (a chain moved to another of its models), `fallbacks` in the
    snapshot, a thinking block's `source` (the model that made it, which alone gets it
    back) and a tool call's `cut` (the output limit cut its arguments: it never runs).
    Every format-12 record, manifest and snapshot is already a valid format-13 one: a
    format-12 session had no chain, its snapshot reads with no fallbacks, its thinking
    blocks with no source (told apart by their shape, as before) and no call cut.
    Nothing is rewritten; the step lets the manifest say 13, so an older orchestrator
    refuses the session instead of failing on a record kind it does not know."""
    return None


def v13_to_v14(directory: Path) -> None:
    """Format 14 adds hooks, MCP pins, time travel, one set of answers across workers
    and traces: the `hook_decided`, `mcp_pinned`, `mcp_tools_loaded`,
    `workspace_checkpoint`, `workspace_restoring`, `workspace_restored`, `session_forked`
    and `remote_refused` records; `hooks`, `mcp` and `checkpoints` in the snapshot; the
    manifest's `trace_id`, `parent` and `parent_seq`; the session directory's `files/`
    (the checkpoint store). Every format-13 record, manifest and snapshot is already a
    valid format-14 one: a format-13 session ran no hook, pinned no MCP tool, took no
    checkpoint (a fork or a rewind to one of its points has no files to restore, and
    says so) and was neither traced nor forked. Nothing is rewritten; the step lets the
    manifest say 14, so an older orchestrator refuses the session instead of failing on
    a record kind it does not know."""
    return None


def v14_to_v15(directory: Path) -> None:
    """Format 15 adds what an MCP server asks during a call: the `mcp_elicited`,
    `mcp_elicit_answered` and `mcp_sampled` records, and `waiting`, `answers` and
    `sampled` in the snapshot's `mcp`; `mcp_pinned`'s `resources` (and `resources` in the
    snapshot's `mcp`: which servers a resumed session may start at their first call);
    and `index-behind` in the checkpoint store (`files/`), the tree its index lags on
    after checkpoints made in-process. Every format-14 record, manifest and snapshot is
    already a valid format-15 one: no server of a format-14 session asked anything, its
    pins say nothing of resources (so its servers start with the session, as they did),
    and its store's index lags on nothing.
    Nothing is rewritten; the step lets the manifest say 15, so an older orchestrator
    refuses the session instead of failing on a record kind it does not know."""
    return None


MIGRATIONS: dict[int, Migration] = {
    1: v1_to_v2,
    2: v2_to_v3,
    3: v3_to_v4,
    4: v4_to_v5,
    5: v5_to_v6,
    6: v6_to_v7,
    7: v7_to_v8,
    8: v8_to_v9,
    9: v9_to_v10,
    10: v10_to_v11,
    11: v11_to_v12,
    12: v12_to_v13,
    13: v13_to_v14,
    14: v14_to_v15,
}


def migrate(directory: Path, manifest: Manifest) -> Manifest:
    """Bring an older session up to `FORMAT_VERSION`, one recorded step at a time."""
    while manifest.format_version < FORMAT_VERSION:
        step = MIGRATIONS.get(manifest.format_version)
        if step is None:
            raise SessionError(
                f"{directory}: no migration from session format {manifest.format_version}"
            )
        step(directory)
        manifest = msgspec.structs.replace(manifest, format_version=manifest.format_version + 1)
        write_manifest(directory, manifest)
    return manifest


def bring_up_to_date(directory: Path, note: Callable[[str], None]) -> None:
    """Migrate a session of an older format in place, under its lock, and `note` that it
    did: the commands that read journals (`sessions show`, `verify`, the library's
    `session_report`) read only the current format."""
    manifest = read_manifest(directory)
    if manifest.format_version < FORMAT_VERSION:
        with SessionLock(directory / LOCK):
            migrate(directory, manifest)
        note(
            f"migrated session {directory.name} from format {manifest.format_version} "
            f"to {FORMAT_VERSION}; the original journal is kept beside it"
        )
